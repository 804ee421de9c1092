"""Margin on augmented batches (Natekar & Sharma, PGDL first place's augmentation margin)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures._margin_measure import RepresentationMarginMeasure
from fitaudit.measures._winners import require_images, standard_augment


class AugmentationMargin(RepresentationMarginMeasure):
    """Minus the five-number-summary mean of normalised early-layer margins on augmented batches.

    See :class:`~fitaudit.measures._margin_measure.RepresentationMarginMeasure`;
    each batch gets the entry's "standard" augmentation: random horizontal
    flip (p = 0.5), random contrast (factor in [0.7, 1.0)) and, for half of
    the images, a centred zoom of scale 0.85-0.99
    (:func:`fitaudit.measures._winners.standard_augment`). Images only.
    """

    name: ClassVar[str] = "augmentation_margin"

    def check_inputs(self, x: np.ndarray) -> None:
        require_images(x, self.name)

    def modify(self, x: Any, y: np.ndarray, rng: np.random.Generator) -> tuple[Any, np.ndarray]:
        return standard_augment(x, rng), y
