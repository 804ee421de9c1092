"""The adversarial examiner (Shu, Liu, Qiu, Yuille, AAAI 2020; METHODS.md section 2).

Worst-case evaluation of a classifier over the nuisance factors that
generate its inputs, with examiners that learn from the testing history.
"""

from __future__ import annotations

from fitaudit.examine.base import Examiner
from fitaudit.examine.random import RandomExaminer
from fitaudit.examine.registry import get_examiner, list_examiners

__all__ = ["Examiner", "RandomExaminer", "get_examiner", "list_examiners"]
