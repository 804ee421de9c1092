"""Agreement between two runs of the same training: a label-free accuracy estimate.

Jiang, Nagarajan, Baek, Kolter ("Assessing generalization of SGD via
disagreement", ICLR 2022, Thm. 4.2 and Eq. 1): when the ensemble of runs is
calibrated, the expected test error of a run equals the expected rate at
which two independent runs disagree on test inputs. With runs f, f' and
inputs x_1 .. x_n the estimate of the accuracy is

    1 - (1/n) sum_i [f(x_i) != f'(x_i)]

(user guide: docs/first-questions.md#agreement-between-runs). Given the two runs, the agreements on independently
drawn inputs are Bernoulli, so the number of agreements is binomial and its
exact (Clopper-Pearson) interval is the estimate's interval.

What it can and cannot see (docs/first-questions.md#do-independent-runs-agree): it uses no labels, so
choosing a model or its settings by its score on the scored data cannot
inflate it; a measured accuracy above it beyond both intervals is a sign of
such selection. It cannot see training on the scored data itself (both runs
would fit the same points): that is the overfitting test's job.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import as_array, check_int, check_labels
from fitaudit.results import Result
from fitaudit.stats.bernstein import ConfidenceInterval
from fitaudit.stats.binomial import (
    DEFAULT_CONFIDENCE,
    AccuracyResult,
    binomial_interval,
    check_confidence_level,
)


@dataclasses.dataclass(repr=False)
class AgreementResult(Result):
    """Agreement of two runs on the scored inputs, beside the measured accuracy.

    Attributes
    ----------
    n : int
        Scored inputs.
    agree : int
        Inputs on which both runs predict the same class.
    estimate : float
        ``agree / n`` = 1 - disagreement, the label-free accuracy estimate.
    confidence_level : float
    low, high : float
        Exact interval of :attr:`estimate` at :attr:`confidence_level`.
    measured : AccuracyResult, optional
        The audited run's accuracy on the same inputs with their labels.
    """

    n: int
    agree: int
    estimate: float
    confidence_level: float
    low: float
    high: float
    measured: AccuracyResult | None = None

    @property
    def disagreement(self) -> float:
        """Fraction of inputs on which the runs disagree."""
        return 1.0 - self.estimate

    def confidence_interval(self, confidence_level: float = DEFAULT_CONFIDENCE) -> ConfidenceInterval:
        """Exact interval of the agreement estimate at ``confidence_level``."""
        return binomial_interval(self.agree, self.n, confidence_level)

    @property
    def gap(self) -> float | None:
        """Measured accuracy minus the agreement estimate (``None`` without a measurement)."""
        return None if self.measured is None else self.measured.accuracy - self.estimate

    def measured_above(self, confidence_level: float | None = None) -> bool | None:
        """Whether the measured accuracy is above the estimate beyond both intervals.

        True when the lower end of the measured accuracy's interval exceeds
        the upper end of the agreement estimate's interval, both at
        ``confidence_level`` (default: the stored level). ``None`` without a
        measured accuracy.
        """
        if self.measured is None:
            return None
        level = self.confidence_level if confidence_level is None else check_confidence_level(confidence_level)
        return self.measured.confidence_interval(level).low > self.confidence_interval(level).high


def _as_predictions(value: Any, name: str, n_classes: int | None) -> tuple[np.ndarray, int | None]:
    """Class indices from labels (1-d) or scores (2-d, argmax); the class count when known."""
    array = as_array(value, name)
    if array.ndim == 2:
        if n_classes is not None and array.shape[1] != n_classes:
            raise InputError(f"`{name}` has {array.shape[1]} score columns but {n_classes} classes were given.")
        if array.shape[0] == 0:
            raise InputError(f"`{name}` must not be empty.")
        return np.argmax(array, axis=1).astype(np.int64), int(array.shape[1])
    return check_labels(array, name, n_classes=n_classes), n_classes


def agreement(
    predictions: Any,
    other_predictions: Any,
    *,
    n_classes: int | None = None,
    other_n_classes: int | None = None,
    measured: AccuracyResult | None = None,
    confidence_level: float = DEFAULT_CONFIDENCE,
) -> AgreementResult:
    """Label-free accuracy estimate 1 - disagreement between two runs, with its interval.

    Parameters
    ----------
    predictions : array-like, shape (n,) or (n, k)
        The audited run's predicted classes, or its class scores (argmax taken).
    other_predictions : array-like, shape (n,) or (n, k')
        Another run of the same training on the same inputs.
    n_classes, other_n_classes : int, optional
        Class counts of the two runs (read from the score widths when scores
        are given); they must be equal.
    measured : AccuracyResult, optional
        The audited run's measured accuracy on these inputs, stored beside
        the estimate (its ``n`` must match).
    confidence_level : float
        Level of the stored interval.

    Returns
    -------
    AgreementResult

    Raises
    ------
    InputError
        Runs with different class counts, different numbers of predictions,
        fewer than two inputs, or a measured accuracy on another number of inputs.

    References
    ----------
    Jiang, Nagarajan, Baek, Kolter, "Assessing generalization of SGD via
    disagreement", ICLR 2022, Eq. 1 and Thm. 4.2.
    """
    level = check_confidence_level(confidence_level)
    if n_classes is not None:
        n_classes = check_int(n_classes, "n_classes", minimum=2)
    if other_n_classes is not None:
        other_n_classes = check_int(other_n_classes, "other_n_classes", minimum=2)
    ours, k = _as_predictions(predictions, "predictions", n_classes)
    theirs, k_other = _as_predictions(other_predictions, "other_predictions", other_n_classes)
    if k is not None and k_other is not None and k != k_other:
        raise InputError(
            f"`other_predictions` comes from a run with {k_other} classes but `predictions` from one "
            f"with {k}; runs of the same training have the same classes."
        )
    if len(theirs) != len(ours):
        raise InputError(
            f"`other_predictions` has {len(theirs)} predictions but `predictions` has {len(ours)}; "
            "both runs must predict the same inputs."
        )
    if len(ours) < 2:
        raise InputError(f"`predictions` must cover at least 2 inputs; got {len(ours)}.")
    if measured is not None:
        if not isinstance(measured, AccuracyResult):
            raise InputError(f"`measured` must be an AccuracyResult; got {type(measured).__name__}.")
        if measured.n != len(ours):
            raise InputError(
                f"`measured` was computed on {measured.n} examples but the runs predicted {len(ours)} inputs."
            )
    agree = int(np.count_nonzero(ours == theirs))
    interval = binomial_interval(agree, len(ours), level)
    return AgreementResult(
        n=int(len(ours)),
        agree=agree,
        estimate=agree / len(ours),
        confidence_level=level,
        low=interval.low,
        high=interval.high,
        measured=measured,
    )


def chosen_run_agreement(
    run_predictions: Any,
    y_true: Any,
    chosen: int,
    *,
    other: int | None = None,
    confidence_level: float = DEFAULT_CONFIDENCE,
) -> AgreementResult:
    """The agreement estimate of one run among several, beside its measured accuracy.

    For the demo's known answer: a run chosen as the best of many by its
    accuracy on the scored data has a measured accuracy inflated by the
    choice, its agreement with another run is not (docs/first-questions.md).

    Parameters
    ----------
    run_predictions : array-like of int, shape (R, n)
        Predicted classes of R runs of one training on the same n inputs.
    y_true : array-like of int, shape (n,)
        Labels of the inputs.
    chosen : int
        The run audited (e.g. ``argmax`` of the runs' accuracies on these
        inputs, or on a separate validation set).
    other : int, optional
        The run it is compared with (default: the next run, cyclically).
    confidence_level : float

    Returns
    -------
    AgreementResult
    """
    from fitaudit.stats.binomial import accuracy

    runs = np.asarray(run_predictions)
    if runs.ndim != 2 or runs.shape[0] < 2:
        raise InputError(f"`run_predictions` must have shape (R, n) with R >= 2 runs; got shape {runs.shape}.")
    chosen = check_int(chosen, "chosen", minimum=0, maximum=runs.shape[0] - 1)
    other = (chosen + 1) % runs.shape[0] if other is None else check_int(other, "other", minimum=0,
                                                                         maximum=runs.shape[0] - 1)
    if other == chosen:
        raise InputError(f"`other` must be another run than `chosen` ({chosen}).")
    measured = accuracy(y_true, runs[chosen], confidence_level=confidence_level)
    return agreement(runs[chosen], runs[other], measured=measured, confidence_level=confidence_level)
