"""Exact binomial intervals and the confidence-level convention of every interval fitaudit reports.

Shared by the accuracy result (:mod:`fitaudit.stats.binomial`), its decision
(:mod:`fitaudit.stats.decision`) and the agreement between runs.
"""

from __future__ import annotations

from typing import Any

from fitaudit._validation import check_float, check_int
from fitaudit.stats.bernstein import ConfidenceInterval

#: the confidence level of every interval unless another is asked for
DEFAULT_CONFIDENCE = 0.95


def check_confidence_level(value: Any, name: str = "confidence_level") -> float:
    """A confidence level in the open interval (0, 1)."""
    return check_float(value, name, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)


def binomial_interval(k: int, n: int, confidence_level: float = DEFAULT_CONFIDENCE) -> ConfidenceInterval:
    """Exact (Clopper-Pearson) interval of a proportion k/n.

    Parameters
    ----------
    k : int
        Successes, ``0 <= k <= n``.
    n : int
        Trials, at least 1.
    confidence_level : float
        In (0, 1); the interval covers the true proportion with at least
        this probability.

    Returns
    -------
    ConfidenceInterval
        ``scipy.stats.binomtest(k, n).proportion_ci(confidence_level, method="exact")``.

    References
    ----------
    Clopper, Pearson, "The use of confidence or fiducial limits illustrated
    in the case of the binomial", Biometrika 26(4), 1934: the limits solve
    P(X >= k | p_low) = P(X <= k | p_high) = (1 - confidence_level) / 2.
    """
    n = check_int(n, "n", minimum=1)
    k = check_int(k, "k", minimum=0, maximum=n)
    level = check_confidence_level(confidence_level)
    from scipy import stats  # lazy: importing fitaudit.stats stays light

    ci = stats.binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
    return ConfidenceInterval(float(ci.low), float(ci.high))
