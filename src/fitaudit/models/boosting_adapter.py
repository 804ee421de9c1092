"""Adapters for XGBoost and LightGBM models loaded from their native files (no pickle).

* XGBoost: ``.json`` or ``.ubj`` (``Booster.save_model`` /
  ``XGBClassifier.save_model``), read by ``xgboost.Booster(model_file=...)``;
* LightGBM: ``.txt`` (``Booster.save_model`` / ``LGBMClassifier.booster_.save_model``),
  read by ``lightgbm.Booster(model_file=...)``.

Both formats are data (trees and numbers); nothing in them runs. The
adapter reads the class count from the objective (``binary:*`` / ``binary``:
2; ``multi:*`` / ``multiclass``: ``num_class``); other objectives
(regression, ranking) are refused. Scores are the raw margins: a binary
margin ``d`` becomes the two columns ``[-d/2, d/2]`` (softmax = ``sigmoid(d)``,
the model's own probability), multi-class margins are the logits (softmax =
the model's ``softprob``). Missing values (NaN) go to the model, which
handles them; a table's columns are matched by the feature names the file
records (missing and extra columns named), by position when it records none.

Class names: an XGBoost file's attribute ``classes`` (a JSON list, set with
``booster.set_attr(classes=json.dumps([...]))``) names the outputs as the
labels it was trained on; otherwise (and for LightGBM, whose file records
none) the labels are the output indices ``0 .. k-1``
(:mod:`fitaudit.models.labels`). XGBoost's scikit-learn wrapper requires
labels ``0 .. k-1`` anyway; ``LGBMClassifier`` trained on other labels
orders its outputs by the sorted labels.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit.models.base import Classifier

#: where lightgbm.basic keeps the logger register_logger sets (restored after a quiet load)
_LOGGER_ATTRIBUTES = ("_LOGGER", "_INFO_METHOD_NAME", "_WARNING_METHOD_NAME")


def _binary_columns(scores: np.ndarray) -> np.ndarray:
    """Margins of shape (n,) as the two logit columns [-d/2, d/2]; (n, k) unchanged."""
    scores = np.asarray(scores, dtype=np.float64)
    return np.stack([-scores / 2.0, scores / 2.0], axis=1) if scores.ndim == 1 else scores


class _Boosted(Classifier):
    """A booster with a classification objective: float inputs with NaN, tables matched by feature name.

    Parameters
    ----------
    booster : xgboost.Booster or lightgbm.Booster
    n_classes : int, optional
        Must match the objective's when given.
    batch_size : int, optional
        Rows per call of the booster; ``None``: as many as fit in 256 MB of float64 input
        (:meth:`~fitaudit.models.base.Classifier.rows_per_call`).
    """

    input_dtype = np.dtype(np.float32)
    takes_missing = True
    #: the library's name, for messages
    library: str = "boosting"

    def __init__(self, booster: Any, *, n_classes: int | None = None, batch_size: int | None = None) -> None:
        self.objective, k = self._objective(booster)
        if k is None:
            raise InputError(f"`model`: the {self.library} model's objective is {self.objective!r}, not a "
                             "classification objective (binary or multi-class).")
        if n_classes is not None and n_classes != k:
            raise InputError(f"`n_classes` is {n_classes} but the {self.library} model has {k} classes "
                             f"({self.objective}).")
        super().__init__(booster, n_classes=k, batch_size=batch_size)

    def _objective(self, booster: Any) -> tuple[str, int | None]:
        """The objective's name and its class count (None: not a classification objective)."""
        raise NotImplementedError

class XGBoostClassifier(_Boosted):
    """An XGBoost ``Booster`` with a ``binary:*`` or ``multi:*`` objective (parameters: :class:`_Boosted`)."""

    kind = "xgboost"
    library = "XGBoost"

    def __init__(self, booster: Any, *, n_classes: int | None = None, batch_size: int | None = None) -> None:
        super().__init__(booster, n_classes=n_classes, batch_size=batch_size)
        self.feature_names = list(booster.feature_names) if booster.feature_names else None
        self.classes = _recorded_classes((booster.attributes() or {}).get("classes"), self.n_classes)

    def _objective(self, booster: Any) -> tuple[str, int | None]:
        config = json.loads(booster.save_config())["learner"]
        objective = str(config["objective"]["name"])
        if objective.startswith("binary:"):
            return objective, 2
        if objective.startswith("multi:"):
            return objective, int(config["learner_model_param"]["num_class"])
        return objective, None

    def _logits_batch(self, x: np.ndarray) -> np.ndarray:
        return _binary_columns(self.model.inplace_predict(x, predict_type="margin", missing=np.nan))

    def _fingerprint_source(self) -> Any:
        return bytes(self.model.save_raw("ubj"))


class LightGBMClassifier(_Boosted):
    """A LightGBM ``Booster`` with a ``binary`` or ``multiclass`` objective (parameters: :class:`_Boosted`)."""

    kind = "lightgbm"
    library = "LightGBM"

    def __init__(self, booster: Any, *, n_classes: int | None = None, batch_size: int | None = None) -> None:
        super().__init__(booster, n_classes=n_classes, batch_size=batch_size)
        names = [str(n) for n in booster.feature_name()]
        # LightGBM names the columns of an array Column_0, Column_1...: no names, the columns by position
        self.feature_names = None if all(re.fullmatch(r"Column_\d+", n) for n in names) else names

    def _objective(self, booster: Any) -> tuple[str, int | None]:
        recorded = booster.params or {}  # the file's parameters; dump_model (the whole model as JSON) when absent
        if "objective" not in recorded:
            recorded = booster.dump_model(num_iteration=0)
        objective = str(recorded.get("objective") or "not recorded").split()[0]
        if objective in ("binary", "cross_entropy", "xentropy"):
            return objective, 2
        if objective in ("multiclass", "softmax", "multiclassova", "multiclass_ova", "ova", "ovr"):
            return objective, int(recorded["num_class"])
        return objective, None

    def _logits_batch(self, x: np.ndarray) -> np.ndarray:
        return _binary_columns(self.model.predict(x, raw_score=True))

    def _fingerprint_source(self) -> Any:
        return self.model.model_to_string()


def _recorded_classes(value: Any, k: int) -> np.ndarray | None:
    """The ``classes`` a model file records (JSON list text), checked against its ``k`` outputs."""
    if value is None:
        return None
    try:
        classes = json.loads(value) if isinstance(value, str) else value
    except json.JSONDecodeError:
        classes = None
    if not isinstance(classes, list) or len(classes) != k or not all(isinstance(c, (str, int)) for c in classes):
        raise InputError(f"`model`: its recorded 'classes' must be a JSON list of {k} class names; got {value!r}.")
    return np.asarray(classes)


class _Silent:
    """A logger for LightGBM's ``register_logger`` that drops its lines."""

    def info(self, message: str) -> None:
        """Drop an information line."""

    def warning(self, message: str) -> None:
        """Drop a warning line."""


@contextlib.contextmanager
def _quiet(module: Any) -> Iterator[None]:
    """LightGBM's log lines ("[LightGBM] [Fatal] ...") dropped while the block runs, its logger restored after."""
    basic = getattr(module, "basic", None)
    saved = tuple(getattr(basic, attr, None) for attr in _LOGGER_ATTRIBUTES)
    if basic is None or saved[0] is None:  # not LightGBM, or another version: nothing to quiet
        yield
        return
    module.register_logger(_Silent())
    try:
        yield
    finally:
        for attr, value in zip(_LOGGER_ATTRIBUTES, saved):
            setattr(basic, attr, value)


def load_booster(path: str | os.PathLike[str], library: str, *, name: str = "path") -> Any:
    """A ``Booster`` of ``library`` (``"xgboost"``: ``.json``/``.ubj``; ``"lightgbm"``: ``.txt``) from its model file.

    Both are safe formats (trees and numbers, no pickle), read by the library itself once their structure is
    checked (:mod:`fitaudit.models.boosting_files`: a malformed file would crash the native reader); LightGBM's
    own log lines are kept off the terminal (its error comes back in the message).
    """
    from fitaudit.models.boosting_files import check_lightgbm_file, check_xgboost_file

    module = import_optional(library, f"loading a {library} model")
    (check_xgboost_file if library == "xgboost" else check_lightgbm_file)(Path(path), name=name)
    try:
        with _quiet(module):
            return module.Booster(model_file=os.fspath(path))
    except Exception as exc:  # xgboost.core.XGBoostError, lightgbm.basic.LightGBMError and others
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"`{name}`: {os.fspath(path)!r} could not be read as a {library} model ({first}).") from exc
