"""Leakage between training and scored data: exact and near duplicates (docs/first-questions.md#did-the-scored-data-leak-into-training)."""

from __future__ import annotations

from fitaudit.leakage.core import feature_leakage, image_leakage, tabular_leakage
from fitaudit.leakage.features import penultimate_features, standardise
from fitaudit.leakage.image_space import ImageFeatures, image_features
from fitaudit.leakage.planted import TWIN_KINDS, PlantedTwins, plant_twins
from fitaudit.leakage.result import LeakageResult

__all__ = [
    "TWIN_KINDS",
    "ImageFeatures",
    "LeakageResult",
    "PlantedTwins",
    "feature_leakage",
    "image_features",
    "image_leakage",
    "penultimate_features",
    "plant_twins",
    "standardise",
    "tabular_leakage",
]
