"""XGBoost (``.json``, ``.ubj``) and LightGBM (``.txt``) model files, read by their own libraries.

Both are data (trees and numbers, no pickle). Their structure is checked
in Python before the native reader sees them
(:mod:`fitaudit.models.boosting_files`: a malformed file would crash it),
and the adapters (:mod:`fitaudit.models.boosting_adapter`) read the class
count from the objective. An XGBoost file is told from a torch or Hugging
Face ``.json`` by its content (its object starts with ``"learner"``), a
LightGBM file from other ``.txt`` files by its first word (``tree``).
Class names: the ``classes`` attribute of an XGBoost file, read by the
adapter; neither file records a pipeline or an input shape.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fitaudit.models.base import Classifier
from fitaudit.models.formats.base import ModelFormat, head


def is_xgboost_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is an XGBoost model file: ``.ubj``, or ``.json`` whose object starts with ``"learner"``."""
    target = Path(path)
    if not target.is_file():
        return False
    suffix = target.suffix.lower()
    if suffix == ".ubj":
        return True
    return suffix == ".json" and b'"learner"' in head(target, 64)


def is_lightgbm_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a LightGBM model text file (``.txt`` starting with ``tree``)."""
    target = Path(path)
    return target.is_file() and target.suffix.lower() == ".txt" and head(target, 8).startswith(b"tree")


class XGBoostFile(ModelFormat):
    """An XGBoost model file (``Booster.save_model``), run by XGBoost."""

    name = "xgboost"
    kind = "xgboost"
    runs_on = "native"
    suffixes = (".json", ".ubj")

    def recognises(self, path: Path) -> bool:
        return is_xgboost_file(path)

    def load(
        self, path: Path, *, n_classes: int | None, batch_size: int | None, device: Any, trust_code: bool,
        trust_torchscript: bool, name: str,
    ) -> Classifier:
        from fitaudit.models import boosting_adapter as boosting

        return boosting.XGBoostClassifier(boosting.load_booster(path, "xgboost", name=name), n_classes=n_classes,
                                          batch_size=batch_size)


class LightGBMFile(ModelFormat):
    """A LightGBM model text file (``Booster.save_model``), run by LightGBM."""

    name = "lightgbm"
    kind = "lightgbm"
    runs_on = "native"
    suffixes = (".txt",)

    def recognises(self, path: Path) -> bool:
        return is_lightgbm_file(path)

    def load(
        self, path: Path, *, n_classes: int | None, batch_size: int | None, device: Any, trust_code: bool,
        trust_torchscript: bool, name: str,
    ) -> Classifier:
        from fitaudit.models import boosting_adapter as boosting

        return boosting.LightGBMClassifier(boosting.load_booster(path, "lightgbm", name=name), n_classes=n_classes,
                                           batch_size=batch_size)
