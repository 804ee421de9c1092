"""Empirical Bernstein bounds and the p-values they give.

The two-sided empirical Bernstein inequality (Audibert, Munos, Szepesvari
2009, Thm. 1; used by Werpachowski, Gyorgy, Szepesvari, NeurIPS 2019, Sec. 3):
for m i.i.d. variables with range U, biased empirical variance s2 and mean
``mean``, with probability at least 1 - delta,

    |mean - E[V]| <= B(m, s2, delta, U)
                   = sqrt(2 s2 ln(3/delta) / m) + 3 U ln(3/delta) / m.

Solving |T| = B(m, s2, p, U) for p gives the closed-form p-value of the
pairwise test (Werpachowski et al. 2019, Sec. 3):

    p = min{1, 3 exp(-m / (9 U^2) (s2 + 3 U |T| - s sqrt(s2 + 6 U |T|)))}.

The exponent is evaluated in the algebraically equal, cancellation-free form
m T^2 / (s2 + 3 U |T| + s sqrt(s2 + 6 U |T|)) (multiply and divide by the
conjugate), which stays accurate when |T| is small next to s2.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import check_array, check_float, check_int


def _check_common(m: int, s2: float, U: float) -> tuple[int, float, float]:
    m = check_int(m, "m", minimum=2)
    s2 = check_float(s2, "s2", low=0.0)
    U = check_float(U, "U", low=0.0, low_inclusive=False)
    return m, s2, U


def empirical_bernstein_bound(m: int, s2: float, delta: float, U: float) -> float:
    """B(m, s2, delta, U) = sqrt(2 s2 ln(3/delta) / m) + 3 U ln(3/delta) / m.

    Parameters
    ----------
    m : int
        Number of i.i.d. variables (at least 2).
    s2 : float
        Their *biased* empirical variance (1/m) sum_i (v_i - mean)^2.
    delta : float
        Failure probability, in (0, 1].
    U : float
        Range of the variables (upper minus lower end of their support).

    Returns
    -------
    float
        The half-width of the (1 - delta) two-sided confidence interval.

    References
    ----------
    Werpachowski, Gyorgy, Szepesvari, "Detecting overfitting via adversarial
    examples", NeurIPS 2019, Sec. 3 (definition of B).
    """
    m, s2, U = _check_common(m, s2, U)
    delta = check_float(delta, "delta", low=0.0, high=1.0, low_inclusive=False)
    log_term = math.log(3.0 / delta)
    return math.sqrt(2.0 * s2 * log_term / m) + 3.0 * U * log_term / m


def bernstein_log_evidence(statistic: float, s2: float, m: int, U: float) -> float:
    """ln(3/p): the value of ln(3/delta) at which |statistic| = B(m, s2, delta, U).

    Equals m / (9 U^2) (s2 + 3 U |T| - s sqrt(s2 + 6 U |T|)), computed as
    m T^2 / (s2 + 3 U |T| + s sqrt(s2 + 6 U |T|)) to avoid cancellation.
    """
    m, s2, U = _check_common(m, s2, U)
    t = abs(check_float(statistic, "statistic"))
    if t == 0.0:
        return 0.0
    s = math.sqrt(s2)
    return m * t * t / (s2 + 3.0 * U * t + s * math.sqrt(s2 + 6.0 * U * t))


def bernstein_pvalue(statistic: float, s2: float, m: int, U: float) -> float:
    """Smallest delta at which |statistic| > B(m, s2, delta, U), capped at 1.

    p = min{1, 3 exp(-m / (9 U^2) (s2 + 3 U |T| - s sqrt(s2 + 6 U |T|)))}
    (Werpachowski et al. 2019, Sec. 3). ``statistic = 0`` gives p = 1.

    Parameters
    ----------
    statistic : float
        The mean T of the m variables (their expectation is 0 under the null).
    s2 : float
        Biased empirical variance of the variables.
    m : int
        Number of variables (at least 2).
    U : float
        Range of the variables.
    """
    return min(1.0, 3.0 * math.exp(-bernstein_log_evidence(statistic, s2, m, U)))


@dataclasses.dataclass(frozen=True)
class ConfidenceInterval:
    """A two-sided interval ``[low, high]`` (as :mod:`scipy.stats` returns them)."""

    low: float
    high: float

    def __contains__(self, value: object) -> bool:
        return isinstance(value, (int, float)) and self.low <= value <= self.high

    def disjoint(self, other: ConfidenceInterval) -> bool:
        """True when the two intervals do not overlap."""
        return self.high < other.low or other.high < self.low


def sample_mean_and_variance(values: np.ndarray, name: str = "values") -> tuple[float, float]:
    """Mean and *biased* variance (1/m) sum (v_i - mean)^2 of a 1-d sample."""
    array = check_array(values, name, ndim=1, min_len=2)
    mean = float(np.mean(array))
    return mean, float(np.mean((array - mean) ** 2))


def bernstein_interval(values: np.ndarray, delta: float, U: float) -> ConfidenceInterval:
    """mean +- B(m, s2, delta, U) for a sample of m i.i.d. variables of range U.

    Holds with probability at least 1 - delta (empirical Bernstein, two-sided).
    """
    array = check_array(values, "values", ndim=1, min_len=2)
    U = check_float(U, "U", low=0.0, low_inclusive=False)
    spread = float(np.max(array) - np.min(array))
    if spread > U * (1 + 1e-12):
        raise InputError(f"`values` span {spread:g}, more than the range `U` = {U:g}.")
    mean, s2 = sample_mean_and_variance(array)
    half = empirical_bernstein_bound(len(array), s2, delta, U)
    return ConfidenceInterval(mean - half, mean + half)
