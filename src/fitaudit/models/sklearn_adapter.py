"""Adapter for a fitted scikit-learn classifier.

Scores
------
* With ``predict_proba`` the logits are the log-probabilities
  ``log max(p, tiny)`` (``tiny`` = smallest positive float64, so a zero
  probability gives a finite -708), and :meth:`predict_proba` gives back
  ``p``. For estimators whose ``predict`` is not the argmax of their
  probabilities (``SVC(probability=True)``) the adapter follows the
  probabilities.
* Otherwise ``decision_function``: its ``(n, k)`` scores are the logits; a
  binary score ``d`` (shape ``(n,)``, positive for ``classes_[1]``) becomes
  the two columns ``[-d/2, d/2]``, whose softmax is ``sigmoid(d)``.

Classes
-------
Column ``j`` is the class ``classes_[j]``: the labels of the data it is
scored on are those classes (:mod:`fitaudit.models.labels` encodes them as
column indices for the instruments).

Inputs
------
Arrays of any dtype and tables (pandas DataFrames, anything with
``__dataframe__``) go to the estimator as they are: a pipeline selects and
encodes its own columns, and one that accepts missing values gets them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit.models.base import Classifier
from fitaudit.models.layout import FLAT, to_layout

_TINY = float(np.finfo(np.float64).tiny)


def is_sklearn_classifier(obj: Any) -> bool:
    """Whether ``obj`` looks like a scikit-learn classifier (fitted or not)."""
    has_scores = hasattr(obj, "predict_proba") or hasattr(obj, "decision_function")
    return has_scores and hasattr(obj, "fit") and hasattr(obj, "get_params")


class SklearnClassifier(Classifier):
    """A fitted scikit-learn classifier (or pipeline ending in one).

    Parameters
    ----------
    estimator : fitted classifier
        Needs ``classes_`` and ``predict_proba`` or ``decision_function``.
    n_classes : int, optional
        Must equal ``len(classes_)`` when given.
    batch_size : int, optional
        Rows per call of ``predict_proba`` (``decision_function``); ``None``: as many as fit in 256 MB of float64
        input (:meth:`~fitaudit.models.base.Classifier.rows_per_call`; one call for a 100,000 x 30 table).

    Attributes
    ----------
    classes : ndarray
        ``classes_`` of the estimator; column ``j`` scores ``classes[j]``.
    """

    kind = "sklearn"

    #: scikit-learn takes 2-d arrays: image batches are flattened (pixel by pixel, channels together)
    image_layout = FLAT

    def __init__(self, estimator: Any, *, n_classes: int | None = None, batch_size: int | None = None) -> None:
        if not hasattr(estimator, "classes_"):
            raise InputError(
                f"`model` is a scikit-learn {type(estimator).__name__} that is not fitted "
                "(it has no `classes_`); fit it first."
            )
        self.classes = np.asarray(estimator.classes_)
        if n_classes is not None and n_classes != len(self.classes):
            raise InputError(
                f"`n_classes` is {n_classes} but the scikit-learn model knows {len(self.classes)} "
                f"classes ({self.classes.tolist()})."
            )
        super().__init__(estimator, n_classes=len(self.classes), batch_size=batch_size)
        self.uses_proba = hasattr(estimator, "predict_proba")
        recorded = getattr(estimator, "feature_names_in_", None)
        self.feature_names = None if recorded is None else [str(n) for n in recorded]

    def _as_input(self, x: Any) -> Any:
        """Tables go to an estimator fitted on a table as they are (a pipeline selects and encodes its columns),
        to one fitted on arrays as arrays; arrays of any dtype as they are (text for a pipeline that encodes it)."""
        from fitaudit.data.tables import as_frame, is_frame

        if is_frame(x):
            frame = as_frame(x, "x")
            if self.feature_names:  # fitted on a table: its columns by name
                return self._columns(frame)
            return self._columns(frame).to_numpy()  # fitted on arrays: the columns by position, as it was given them
        try:
            array = np.asarray(x)
        except Exception as exc:  # ragged lists and the like
            raise InputError(f"`x` must be array-like; could not convert it ({exc}).") from exc
        if array.ndim < 1:
            raise InputError(f"`x` must have one row per example; got a scalar of shape {array.shape}.")
        return to_layout(array, self.image_layout)  # a channels-first image batch flattened

    def _logits_batch(self, x: np.ndarray) -> np.ndarray:
        if self.uses_proba:
            proba = np.asarray(self.model.predict_proba(x), dtype=np.float64)
            return np.log(np.maximum(proba, _TINY))
        scores = np.asarray(self.model.decision_function(x), dtype=np.float64)
        if scores.ndim == 1:
            return np.stack([-scores / 2.0, scores / 2.0], axis=1)
        return scores
