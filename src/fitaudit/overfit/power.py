"""What the pairwise test could have seen: its detectable T at 80% power and the largest T the shifts allow.

Werpachowski, Gyorgy, Szepesvari (NeurIPS 2019), Sec. 3: the pairwise test
(Test B) rejects independence when |T| > B(m, s2_T, delta, U), with
T = R_g - R_S the mean of T_i = L(f, g(X_i)) h_g(g(X_i)) - L(f, X_i) and B
the empirical Bernstein bound. A pass says only that the sample's T stayed
below B; this module says how large a T the test would have seen.

* :func:`detectable_statistic`: the smallest E[T] = tau the test rejects
  with probability :data:`~fitaudit.stats.agreement.DETECTION_POWER` (80%)
  at this m. Model of the alternative: a share q = tau / c of the examples
  gains a successful adversarial example of the largest weight
  c = U - 1 (the largest T_i; 1/2 for a deterministic AEG, whose
  h_g <= 1/2 on successful points), on top of the sample's own T_i, so
  Var(T_i) = s2_T + tau (c - tau) (the largest variance any share of
  successes of weight at most c gives at mean tau). With T approximately
  normal, the power at tau is P(T > B) with B evaluated at that variance:
  tau - z_power sqrt(Var / m) >= B(m, Var, delta, U); s2_T is taken
  without the spread the sample's own T > 0 adds (:func:`base_variance`),
  so an effect is not counted twice. Checked by
  simulation in ``tests/overfit/test_overfit_power.py`` (rejection rates within
  0.05 of 80%).
* :func:`reachable_statistic`: the largest T the sample allows whatever the
  model's dependence: only a correctly classified example whose shifted
  copy is misclassified (a successful adversarial example, ``n_success``)
  makes T_i > 0, and then T_i <= c; so T <= c n_success / m.

The rule (:func:`shifts_can_reveal`): where the shifts change so few of the
model's answers that even the reachable T is below the detectable one, the
test could not have rejected, and its pass says nothing about the model's
error rate being a risk estimate. The power study
(``benchmarks/validity/overfit_power.py``) found exactly this case: CNNs
fitted to 300 scattered digits whose one-pixel shifts change 1-3% of their
answers on their own training images (reachable T 0.004-0.012 against a
detectable 0.1) were never rejected, while MLPs, whose shifts change a
third of their answers, always were.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.stats import norm

from fitaudit._validation import check_float, check_int
from fitaudit.stats.agreement import DETECTION_POWER

#: grid points over (0, c] searched for the detectable T (resolution c / GRID)
GRID = 20_000


def detectable_statistic(m: int, variance: float, delta: float, U: float, *,
                         power: float = DETECTION_POWER) -> float | None:
    """The smallest E[T] the pairwise test rejects with probability ``power`` at ``m`` (None: none up to c).

    Parameters
    ----------
    m : int
        Examples.
    variance : float
        s2_T of the sample (the T_i's spread without the effect).
    delta, U : float
        The test's level and the range of the T_i (c = U - 1 is the
        largest T_i, the weight of a successful adversarial example).
    power : float
        Default 0.8 (:data:`~fitaudit.stats.agreement.DETECTION_POWER`).
    """
    m = check_int(m, "m", minimum=2)
    variance = check_float(variance, "variance", low=0.0)
    delta = check_float(delta, "delta", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    U = check_float(U, "U", low=0.0, low_inclusive=False)
    power = check_float(power, "power", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    c = U - 1.0
    if c <= 0.0:  # no T_i above 0: nothing to detect
        return None
    tau = c * np.arange(1, GRID + 1) / GRID
    spread = variance + tau * (c - tau)
    log_term = math.log(3.0 / delta)
    bound = np.sqrt(2.0 * spread * log_term / m) + 3.0 * U * log_term / m  # B(m, Var, delta, U), vectorised
    seen = tau - norm.ppf(power) * np.sqrt(spread / m) >= bound
    return float(tau[np.argmax(seen)]) if seen.any() else None


def reachable_statistic(n_success: int, m: int, U: float) -> float:
    """The largest T = R_g - R_S a sample with ``n_success`` successful adversarial examples can show: c n_success / m."""
    return (U - 1.0) * check_int(n_success, "n_success", minimum=0) / check_int(m, "m", minimum=1)


def base_variance(statistic: float, variance: float, U: float) -> float:
    """s2_T less the spread an observed T > 0 of successes of weight c = U - 1 adds, T (c - T) (at least 0).

    The alternative of :func:`detectable_statistic` adds that spread to the
    sample's own; on a sample that already shows an effect, counting it
    twice would understate the power.
    """
    effect = min(max(statistic, 0.0), max(U - 1.0, 0.0))
    return max(variance - effect * (U - 1.0 - effect), 0.0)


def power_numbers(result: Any) -> dict[str, Any]:
    """The pass's power numbers: ``detectable_T`` (None: none), ``reachable_T`` and ``shifted_answers`` (share)."""
    pairwise = getattr(result, "pairwise", result)
    spread = base_variance(float(result.statistic), float(pairwise.variance), float(result.U))
    numbers: dict[str, Any] = {"detectable_T": detectable_statistic(int(result.m), spread, float(result.delta),
                                                                    float(result.U)),
                               "power": DETECTION_POWER}
    n_success = getattr(result, "n_success", None)
    if n_success is not None:
        numbers |= {"shifted_answers": int(n_success) / int(result.m),
                    "reachable_T": reachable_statistic(int(n_success), int(result.m), float(result.U))}
    return numbers


def shifts_can_reveal(numbers: dict[str, Any]) -> bool:
    """The rule: the test could have rejected (the reachable T reaches the detectable one) on these numbers."""
    detectable = numbers.get("detectable_T")
    if detectable is None:
        return False
    reachable = numbers.get("reachable_T")
    return reachable is None or reachable >= detectable
