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
Column ``j`` is the class ``classes_[j]``. When ``classes_`` is
``0, 1, ..., k-1`` (the usual case) labels and columns coincide; otherwise
(strings, or integers such as ``1, 2, 5``) encode labels with
:meth:`SklearnClassifier.encode_labels` before using them with an instrument.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit.models.base import Classifier

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
    batch_size : int

    Attributes
    ----------
    classes : ndarray
        ``classes_`` of the estimator; column ``j`` scores ``classes[j]``.
    """

    kind = "sklearn"

    def __init__(self, estimator: Any, *, n_classes: int | None = None, batch_size: int = 256) -> None:
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

    @property
    def labels_are_indices(self) -> bool:
        """True when ``classes_`` is exactly ``0, 1, ..., k-1``."""
        return bool(
            np.issubdtype(self.classes.dtype, np.integer)
            and np.array_equal(self.classes, np.arange(len(self.classes)))
        )

    def encode_labels(self, y: Any, name: str = "y") -> np.ndarray:
        """Map original labels (values of ``classes_``) to column indices.

        Raises
        ------
        InputError
            If a label is not one of ``classes_``.
        """
        labels = np.asarray(y)
        if labels.ndim != 1:
            raise InputError(f"`{name}` must be a 1-d array of labels; got shape {labels.shape}.")
        order = np.argsort(self.classes)
        sorted_classes = self.classes[order]
        try:
            position = np.clip(np.searchsorted(sorted_classes, labels), 0, len(sorted_classes) - 1)
        except TypeError as exc:
            raise InputError(
                f"`{name}` labels of dtype {labels.dtype} cannot be compared with the model's classes "
                f"{self.classes.tolist()}."
            ) from exc
        known = sorted_classes[position] == labels
        if not np.all(known):
            unknown = np.unique(labels[~known])[:5].tolist()
            raise InputError(
                f"`{name}` holds labels the model does not know: {unknown}; "
                f"its classes are {self.classes.tolist()}."
            )
        return order[position].astype(np.int64)

    def _logits_batch(self, x: np.ndarray) -> np.ndarray:
        if self.uses_proba:
            proba = np.asarray(self.model.predict_proba(x), dtype=np.float64)
            return np.log(np.maximum(proba, _TINY))
        scores = np.asarray(self.model.decision_function(x), dtype=np.float64)
        if scores.ndim == 1:
            return np.stack([-scores / 2.0, scores / 2.0], axis=1)
        return scores
