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

What it can see at this n: a choice by the score inflates the measured
accuracy by a *selection gain* g (the chosen run's accuracy here minus what
it would be on new data). :func:`rejection_probability` is the probability
that the check (measured accuracy's exact interval entirely above the
estimate's) fires at gain g, computed exactly for two independent binomial
counts (the agreements at rate p, the correct predictions at rate p + g);
:func:`detectable_gain` is the smallest g it sees with probability
:data:`DETECTION_POWER`. On the same inputs the two counts are positively
correlated (where the runs agree the model is more often right), which
narrows their difference and only raises the power at such gains, so the
number is conservative (checked by simulation in
``tests/stats/test_agreement_power.py``). The verdict
(:meth:`AgreementResult.verdict`) passes only when that gain is at most
:data:`RELEVANT_GAIN`; a check that cannot see gains of that size is
``inconclusive`` with the gain it could see, and runs that disagree far less
often than the model errs (copies, seeds of the same tree ensemble) are
flagged as uninformative: their agreement is no estimate of accuracy.
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
from fitaudit.stats.decision import agreement_contradiction
from fitaudit.verdict import Verdict

#: probability with which the check must see a selection gain for it to count as detectable
DETECTION_POWER = 0.8

#: selection gain (accuracy, absolute) the check must see with DETECTION_POWER before it may pass (fitaudit's convention)
RELEVANT_GAIN = 0.02

#: runs whose disagreement (upper end) is below this fraction of the measured error (lower end) are uninformative
UNINFORMATIVE_RATIO = 0.5


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

    def detectable_gain(self, power: float = DETECTION_POWER) -> float | None:
        """The smallest selection gain the check sees with probability ``power`` at this n (:func:`detectable_gain`)."""
        return detectable_gain(self.n, self.estimate, power=power, confidence_level=self.confidence_level)

    def uninformative(self) -> bool | None:
        """Whether the runs disagree far less often than the model errs (their agreement estimates nothing).

        True when the upper end of the disagreement's interval is below
        :data:`UNINFORMATIVE_RATIO` times the lower end of the measured
        error's: under the calibration Jiang et al. assume the two rates
        are equal in expectation. ``None`` without a measured accuracy.
        """
        if self.measured is None:
            return None
        error_low = 1.0 - self.measured.confidence_interval(self.confidence_level).high
        return (1.0 - self.low) < UNINFORMATIVE_RATIO * error_low

    def verdict(self, *, relevant_gain: float = RELEVANT_GAIN, **_: Any) -> Verdict:
        """The decision: selection by the score seen (``fail``), unseeable (``inconclusive``), or not seen (``pass``).

        ``info`` without a measured accuracy (the estimate alone);
        ``fail`` when the measured accuracy is above the estimate beyond
        both intervals; ``inconclusive`` when the runs are uninformative
        (:meth:`uninformative`) or when the smallest gain the check sees
        with probability :data:`DETECTION_POWER` exceeds ``relevant_gain``
        (or no gain can be seen); else ``pass``.
        """
        gain = self.detectable_gain()
        numbers: dict[str, Any] = {
            "estimate": self.estimate, "agree": self.agree, "n": self.n, "low": self.low, "high": self.high,
            "confidence_level": self.confidence_level, "detectable_gain": gain, "power": DETECTION_POWER,
            "relevant_gain": relevant_gain,
        }
        if self.measured is None:
            return Verdict("info", "label_free_estimate", numbers)
        interval = self.measured.confidence_interval(self.confidence_level)
        numbers.update({"measured": self.measured.accuracy, "measured_low": interval.low,
                        "measured_high": interval.high})
        if self.measured_above():
            return Verdict("fail", "measured_above_estimate", numbers)
        if self.uninformative():
            numbers["disagreement_high"] = 1.0 - self.low
            numbers["error_low"] = 1.0 - interval.high
            return Verdict("inconclusive", "runs_nearly_never_disagree", numbers)
        if gain is None or gain > relevant_gain:
            return Verdict("inconclusive", "gain_below_detection", numbers)
        return Verdict("pass", "no_selection_seen", numbers)

    def contradiction(self) -> str | None:
        """Where a saved copy disagrees with its counts (:func:`fitaudit.stats.decision.agreement_contradiction`)."""
        return agreement_contradiction(self)


def _interval_ends(n: int, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact (Clopper-Pearson) lower and upper ends for every count k = 0..n (as :func:`binomial_interval`)."""
    from scipy import stats

    k = np.arange(n + 1, dtype=float)
    alpha = 1.0 - level
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(k > 0, stats.beta.ppf(alpha / 2, k, n - k + 1), 0.0)
        high = np.where(k < n, stats.beta.ppf(1 - alpha / 2, k + 1, n - k), 1.0)
    return low, high


def rejection_probability(n: int, agreement_rate: float, gain: float, *,
                          confidence_level: float = DEFAULT_CONFIDENCE) -> float:
    """Probability that the measured accuracy's interval lies above the estimate's at selection gain ``gain``.

    Exact for independent counts: agreements ~ Binomial(n, p) with p =
    ``agreement_rate``, correct predictions ~ Binomial(n, p + gain); the
    check fires when the lower end of the correct count's exact interval
    exceeds the upper end of the agreement count's
    (:meth:`AgreementResult.measured_above`). The sum runs over the
    agreement counts, each with the smallest correct count that fires.
    """
    from scipy import stats

    n = check_int(n, "n", minimum=1)
    level = check_confidence_level(confidence_level)
    p, q = float(agreement_rate), float(agreement_rate) + float(gain)
    if not 0.0 <= p <= 1.0 or not 0.0 <= q <= 1.0:
        raise InputError(f"`agreement_rate` and `agreement_rate + gain` must lie in [0, 1]; got {p:g} and {q:g}.")
    low, high = _interval_ends(n, level)
    first = np.searchsorted(low, high, side="right")  # smallest correct count whose lower end exceeds high[j]
    agree = stats.binom.pmf(np.arange(n + 1), n, p)
    fires = stats.binom.sf(first - 1, n, q)  # P(correct >= first)
    return float(np.clip(np.sum(agree * fires), 0.0, 1.0))


def detectable_gain(n: int, agreement_rate: float, *, power: float = DETECTION_POWER,
                    confidence_level: float = DEFAULT_CONFIDENCE, tolerance: float = 1e-4) -> float | None:
    """The smallest selection gain the agreement check sees with probability ``power`` (None: none it can see).

    Bisection on :func:`rejection_probability`, which grows with the gain,
    to within ``tolerance``; the gain reported is the upper end (the check
    sees it with at least ``power``). None when even a measured accuracy of
    1 would not be seen with that probability.
    """
    if not 0.0 < power < 1.0:
        raise InputError(f"`power` must lie strictly between 0 and 1; got {power!r}.")
    p = float(agreement_rate)
    top = 1.0 - p
    if top <= 0 or rejection_probability(n, p, top, confidence_level=confidence_level) < power:
        return None
    lo, hi = 0.0, top
    while hi - lo > tolerance:
        mid = (lo + hi) / 2
        if rejection_probability(n, p, mid, confidence_level=confidence_level) >= power:
            hi = mid
        else:
            lo = mid
    return hi


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

    A run chosen as the best of many by its accuracy on the scored data has
    a measured accuracy inflated by the choice; its agreement with another
    run is not. How large a gain the check can see at a given n is
    :meth:`AgreementResult.detectable_gain` (docs/first-questions.md; the
    validity benchmark ``benchmarks/validity/agreement.py`` measures it on
    real digits).

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
