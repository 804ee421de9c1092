"""Accuracy k/n with its exact (Clopper-Pearson) interval, overall and per class.

The number of correct predictions k out of n scored examples is binomial
when the examples are drawn independently; the Clopper-Pearson interval
(Clopper & Pearson, Biometrika 1934) inverts the two one-sided binomial
tests and covers the true accuracy with probability at least the
confidence level for every n. It is computed by
``scipy.stats.binomtest(k, n).proportion_ci(confidence_level, method="exact")``
(user guide: docs/first-questions.md#the-accuracy-interval).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import check_int, check_labels
from fitaudit.results import Result
from fitaudit.stats.bernstein import ConfidenceInterval
from fitaudit.stats.decision import accuracy_contradiction, accuracy_verdict
from fitaudit.stats.intervals import DEFAULT_CONFIDENCE, binomial_interval, check_confidence_level
from fitaudit.verdict import Verdict


@dataclasses.dataclass(repr=False)
class AccuracyResult(Result):
    """Accuracy on the scored data with its exact interval, overall and per class.

    Attributes
    ----------
    correct : int
        k, the correctly classified examples.
    n : int
        The scored examples.
    accuracy : float
        k / n.
    confidence_level : float
        Level of :attr:`low`, :attr:`high` and the per-class intervals.
    low, high : float
        The Clopper-Pearson interval of the accuracy at :attr:`confidence_level`.
    class_correct, class_total : ndarray of int64, shape (n_classes,)
        Correct and scored examples of every true class.
    class_low, class_high : ndarray of float64, shape (n_classes,)
        Per-class intervals at :attr:`confidence_level` (NaN for a class
        with no scored example: its accuracy is undefined).
    class_names : list of str, optional
        Names of the classes, in label order.
    """

    ALIGNED = (("class_correct", "class_total", "class_low", "class_high"),)  # one value per class

    correct: int
    n: int
    accuracy: float
    confidence_level: float
    low: float
    high: float
    class_correct: np.ndarray
    class_total: np.ndarray
    class_low: np.ndarray
    class_high: np.ndarray
    class_names: list[str] | None = None

    @property
    def n_classes(self) -> int:
        """Number of classes counted."""
        return int(len(self.class_total))

    @property
    def class_accuracy(self) -> np.ndarray:
        """Accuracy of every true class (NaN where the class has no scored example)."""
        total = self.class_total.astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(total > 0, self.class_correct / np.maximum(total, 1), np.nan)

    def class_name(self, label: int) -> str:
        """The name of class ``label`` (its index when no names were given)."""
        return str(label) if self.class_names is None else self.class_names[label]

    def confidence_interval(self, confidence_level: float = DEFAULT_CONFIDENCE) -> ConfidenceInterval:
        """Exact interval of the overall accuracy at ``confidence_level``."""
        return binomial_interval(self.correct, self.n, confidence_level)

    def class_confidence_interval(
        self, label: int, confidence_level: float = DEFAULT_CONFIDENCE
    ) -> ConfidenceInterval:
        """Exact interval of the accuracy on class ``label``.

        Raises
        ------
        InputError
            ``label`` is not a class, or no scored example has it (the
            class's accuracy is undefined).
        """
        label = check_int(label, "label", minimum=0, maximum=self.n_classes - 1)
        total = int(self.class_total[label])
        if total == 0:
            raise InputError(
                f"`label` {label}: class {self.class_name(label)!r} has no scored examples, "
                "so its accuracy and interval are undefined."
            )
        return binomial_interval(int(self.class_correct[label]), total, confidence_level)

    def empty_classes(self) -> list[int]:
        """Labels of the classes with no scored example."""
        return [int(c) for c in np.flatnonzero(self.class_total == 0)]

    def verdict(self, **context: Any) -> Verdict:
        """The accuracy and its interval, a measurement (:func:`fitaudit.stats.decision.accuracy_verdict`)."""
        return accuracy_verdict(self, **context)

    def contradiction(self) -> str | None:
        """Where a saved copy disagrees with its counts (:func:`fitaudit.stats.decision.accuracy_contradiction`)."""
        return accuracy_contradiction(self)


def _class_intervals(
    correct: np.ndarray, total: np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray]:
    low = np.full(len(total), np.nan)
    high = np.full(len(total), np.nan)
    for c in np.flatnonzero(total > 0):
        ci = binomial_interval(int(correct[c]), int(total[c]), level)
        low[c], high[c] = ci.low, ci.high
    return low, high


def accuracy(
    y_true: Any,
    y_pred: Any,
    *,
    n_classes: int | None = None,
    class_names: Sequence[str] | None = None,
    confidence_level: float = DEFAULT_CONFIDENCE,
    require_every_class: bool = False,
) -> AccuracyResult:
    """Accuracy of predictions with its exact interval, overall and per true class.

    Parameters
    ----------
    y_true : array-like of int, shape (n,)
        True class labels.
    y_pred : array-like of int, shape (n,)
        Predicted class labels.
    n_classes : int, optional
        Number of classes (default: the length of ``class_names``, else one
        more than the largest label seen, at least 2).
    class_names : sequence of str, optional
        Names of the classes in label order.
    confidence_level : float
        Level of the stored intervals (other levels: the result's methods).
    require_every_class : bool
        Raise when a class has no scored example instead of leaving its
        interval NaN.

    Returns
    -------
    AccuracyResult

    Raises
    ------
    InputError
        Labels of different lengths, labels outside ``[0, n_classes)`` or,
        with ``require_every_class``, a class with no scored example (named).

    References
    ----------
    Clopper & Pearson (1934); docs/first-questions.md#the-accuracy-interval.
    """
    level = check_confidence_level(confidence_level)
    names = None if class_names is None else [str(c) for c in class_names]
    if n_classes is None and names is not None:
        n_classes = len(names)
    if n_classes is not None:
        n_classes = check_int(n_classes, "n_classes", minimum=2)
        if names is not None and len(names) != n_classes:
            raise InputError(f"`class_names` has {len(names)} names but `n_classes` is {n_classes}.")
    truth = check_labels(y_true, "y_true", n_classes=n_classes)
    pred = check_labels(y_pred, "y_pred", n_classes=n_classes, length=len(truth))
    k = n_classes if n_classes is not None else max(2, int(max(truth.max(), pred.max())) + 1)
    hit = truth == pred
    total = np.bincount(truth, minlength=k).astype(np.int64)
    correct = np.bincount(truth, weights=hit, minlength=k).astype(np.int64)
    class_low, class_high = _class_intervals(correct, total, level)
    overall = binomial_interval(int(hit.sum()), len(truth), level)
    result = AccuracyResult(
        correct=int(hit.sum()),
        n=int(len(truth)),
        accuracy=float(hit.mean()),
        confidence_level=level,
        low=overall.low,
        high=overall.high,
        class_correct=correct,
        class_total=total,
        class_low=class_low,
        class_high=class_high,
        class_names=names,
    )
    if require_every_class and result.empty_classes():
        missing = ", ".join(repr(result.class_name(c)) for c in result.empty_classes())
        raise InputError(f"`y_true` has no examples of class(es) {missing}; every class needs at least one.")
    return result
