"""The adversarial examiner (Shu, Liu, Qiu, Yuille, AAAI 2020; docs/examiner.md).

Worst-case evaluation of a classifier over the nuisance factors that
generate its inputs, with examiners that learn from the testing history.
"""

from __future__ import annotations

from fitaudit.examine.base import Examiner
from fitaudit.examine.embedding import QueryEmbedding, can_embed, embed_queries
from fitaudit.examine.examination import examine, restrict_space
from fitaudit.examine.losses import LOSSES
from fitaudit.examine.random import RandomExaminer
from fitaudit.examine.registry import get_examiner, list_examiners
from fitaudit.examine.result import ExaminationResult, load_queries
from fitaudit.examine.weakness import WeaknessReport, weakness_report

__all__ = [
    "LOSSES",
    "ExaminationResult",
    "Examiner",
    "QueryEmbedding",
    "RandomExaminer",
    "WeaknessReport",
    "can_embed",
    "embed_queries",
    "examine",
    "get_examiner",
    "list_examiners",
    "load_queries",
    "restrict_space",
    "weakness_report",
]
