"""What the slice search could see: the smallest accuracy gap it detects in a slice of a given size.

A slice of ``size`` rows whose accuracy is ``gap`` below the rest's is
flagged when its one-sided Fisher p-value passes the Benjamini-Hochberg
threshold and its observed gap is at least ``min_gap``. With one weak slice
among ``m`` tried, the threshold is at least ``level / m`` (its rank is 1),
so the power computed at ``level / m`` is a lower bound of the search's.
The slice's errors ``K`` are binomial with rate ``1 - accuracy + gap``, the
rest's ``J`` with rate ``1 - accuracy``. For each ``J`` the slice is flagged
from a critical count of errors on (the p-value falls as ``K`` grows with
``J`` fixed: :func:`critical_errors`, found by bisection), so the power of a
gap is a sum over ``J`` of binomial tails, and the smallest gap with the
stated power is found by bisection too (the power grows with the gap).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import stats

#: the power at which the smallest detectable gap is stated
POWER = 0.8

#: tail probability of the rest's error count left out of the power sums
_TAIL = 1e-9


def _rest_counts(rest: int, error_rate: float) -> tuple[np.ndarray, np.ndarray]:
    """The plausible error counts of the rest (all but a ``_TAIL`` probability) and their probabilities."""
    lo = int(stats.binom.ppf(_TAIL, rest, error_rate))
    hi = int(stats.binom.isf(_TAIL, rest, error_rate))
    counts = np.arange(lo, hi + 1)
    return counts, stats.binom.pmf(counts, rest, error_rate)


def flagged(n: int, size: int, slice_errors: np.ndarray, rest_errors: np.ndarray, threshold: float,
            min_gap: float) -> np.ndarray:
    """Whether a slice of ``size`` of the ``n`` rows with these errors, beside a rest with those, is flagged."""
    from fitaudit.slices.search import fisher_greater

    k, j = np.broadcast_arrays(np.asarray(slice_errors, dtype=np.float64), np.asarray(rest_errors, dtype=np.float64))
    pvalues = fisher_greater(k, np.full(k.shape, float(size)), k + j, n)
    return (pvalues <= threshold) & (k / size - j / (n - size) >= min_gap - 1e-12)


def critical_errors(n: int, size: int, rest_errors: np.ndarray, threshold: float, min_gap: float) -> np.ndarray:
    """For each error count of the rest, the fewest errors of the slice that flag it (``size + 1``: none do)."""
    rest_errors = np.asarray(rest_errors, dtype=np.float64)
    lo = np.full(rest_errors.shape, -1.0)  # not flagged at lo (-1: below every count) ...
    hi = np.full(rest_errors.shape, float(size + 1))  # ... flagged at hi (size + 1: above every count)
    while np.any(hi - lo > 1):
        open_ = hi - lo > 1
        middle = np.where(open_, np.floor((lo + hi) / 2), 0.0)
        yes = flagged(n, size, middle, rest_errors, threshold, min_gap)
        hi = np.where(open_ & yes, middle, hi)
        lo = np.where(open_ & ~yes, middle, lo)
    return hi


def power_curve(n: int, size: int, accuracy: float, threshold: float, min_gap: float) -> Callable[[float], float]:
    """The probability, as a function of the gap, that a slice of ``size`` of the ``n`` rows whose accuracy is
    that gap below the rest's ``accuracy`` is flagged (per-slice level ``threshold``, smallest gap ``min_gap``)."""
    rest_errors, weights = _rest_counts(n - size, 1.0 - accuracy)
    critical = critical_errors(n, size, rest_errors, threshold, min_gap)

    def power_at(gap: float) -> float:
        rate = min(1.0, max(0.0, 1.0 - accuracy + gap))
        return float(weights @ stats.binom.sf(critical - 1, size, rate))

    return power_at


def detectable_gap(n: int, size: int, accuracy: float, threshold: float, min_gap: float,
                   power: float = POWER) -> float | None:
    """The smallest gap below ``accuracy`` (the rest's) that a slice of ``size`` of the ``n`` rows shows with
    ``power``, at per-slice level ``threshold`` and smallest flagged gap ``min_gap``; ``None`` when even a
    slice that is always wrong is not seen that often (or there is no rest).

    Examples
    --------
    >>> gap = detectable_gap(1000, 20, 0.9, 0.05 / 500, 0.05)
    >>> 0.4 < gap < 0.7
    True
    """
    if size >= n or size < 1 or accuracy <= 0:
        return None
    power_at = power_curve(n, size, accuracy, threshold, min_gap)
    if power_at(accuracy) < power:
        return None
    low, high = 0.0, float(accuracy)
    for _ in range(40):
        middle = (low + high) / 2
        low, high = (middle, high) if power_at(middle) < power else (low, middle)
    return max(high, float(min_gap))


__all__ = ["POWER", "critical_errors", "detectable_gap", "flagged", "power_curve"]
