"""The leakage question's power: the detectable share in closed form, checked by simulating the decision."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from fitaudit.leakage.decision import LEAKAGE_LEVEL, MAX_UNDETECTED_SHARE, leakage_verdict
from fitaudit.leakage.power import (
    critical_count,
    detectable_share,
    detection_power,
    excess_pvalue,
    scored_for_share,
)


@pytest.mark.parametrize(("n", "j", "c"), [(200, 0, 369), (438, 29, 1023), (50, 3, 400), (5, 0, 10), (300, 290, 300)])
def test_critical_count_is_the_first_count_below_the_level(n: int, j: int, c: int) -> None:
    level = LEAKAGE_LEVEL / 2
    slow = next((k for k in range(1, n + 1) if excess_pvalue(k, n, j, c) < level), None)  # one count at a time
    assert critical_count(n, j, c, level) == slow


@pytest.mark.parametrize(("n", "j", "c"), [(200, 0, 369), (438, 29, 1023), (2000, 40, 4000)])
def test_detectable_share_is_where_the_binomial_power_reaches_80_percent(n: int, j: int, c: int) -> None:
    level = LEAKAGE_LEVEL / 2
    share = detectable_share(n, j, c, level)
    assert share is not None
    critical = critical_count(n, j, c, level)
    assert critical is not None
    rate = j / c

    def power(s: float) -> float:  # the tail of the count, straight from scipy
        return float(stats.binom(n, s + (1 - s) * rate).sf(critical - 1))

    assert power(share) >= 0.8 > power(share - 2e-4)


def _simulated_fail_rate(share: float, n: int, near: tuple[int, int], exact: tuple[int, int], runs: int,
                         rng: np.random.Generator) -> float:
    """The decision's two Fisher tests (scipy's) on scored sets where each row is leaked with probability ``share``.

    A leaked row is an exact copy (it counts in both tests); another row counts as near or exact at the
    training data's own rates (an exact repeat is near too).
    """
    level = LEAKAGE_LEVEL / 2
    near_rate, exact_rate = near[0] / near[1], exact[0] / exact[1]
    failed = 0
    for _ in range(runs):
        leaked = rng.random(n) < share
        u = rng.random(n)
        k_exact = int(np.sum(leaked | (u < exact_rate)))
        k_near = int(np.sum(leaked | (u < near_rate)))
        p_near = stats.fisher_exact([[k_near, n - k_near], [near[0], near[1] - near[0]]], alternative="greater")[1]
        p_exact = stats.fisher_exact([[k_exact, n - k_exact], [exact[0], exact[1] - exact[0]]],
                                     alternative="greater")[1]
        failed += min(p_near, p_exact) < level
    return failed / runs


@pytest.mark.parametrize(("n", "near", "exact"), [(438, (29, 1023), (13, 1023)), (600, (3, 600), (0, 600))])
def test_the_stated_share_is_detected_with_80_percent_power_in_simulation(n, near, exact) -> None:
    class Counts:  # what the decision reads of a LeakageResult
        n_scored, n_near, n_exact = n, 0, 0
        null_near, n_calibration = near
        null_exact, n_train = exact
        accuracy = accuracy_without = None

    share = leakage_verdict(Counts()).numbers["detectable_share"]
    rng = np.random.default_rng(0)
    runs = 1500  # standard error of a rate near 0.8: 0.010
    assert _simulated_fail_rate(share, n, near, exact, runs, rng) >= 0.8 - 0.03
    assert _simulated_fail_rate(share / 2, n, near, exact, runs, rng) < 0.8 - 0.1  # half of it is seen less often


def test_scored_for_share_is_the_first_size_with_the_power() -> None:
    level, nulls = LEAKAGE_LEVEL / 2, [(29, 1023), (13, 1023)]
    n = scored_for_share(MAX_UNDETECTED_SHARE, nulls, level)
    assert n is not None
    assert max(detection_power(MAX_UNDETECTED_SHARE, n, j, c, level) for j, c in nulls) >= 0.8
    assert max(detection_power(MAX_UNDETECTED_SHARE, n - 1, j, c, level) for j, c in nulls) < 0.8
    assert scored_for_share(MAX_UNDETECTED_SHARE, [(4883, 5000), (13784, 14133)], level) is None  # rows that repeat
