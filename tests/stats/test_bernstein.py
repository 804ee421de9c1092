"""Empirical Bernstein bound and the closed-form p-value (Werpachowski et al. 2019, Sec. 3)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from fitaudit import InputError
from fitaudit.stats import (
    ConfidenceInterval,
    bernstein_interval,
    bernstein_log_evidence,
    bernstein_pvalue,
    empirical_bernstein_bound,
)


def reference_bound(m: int, s2: float, delta: float, U: float) -> float:
    """B straight from the formula (docs/overfit.md#the-empirical-bernstein-bound), defined for any delta in (0, 3]."""
    return math.sqrt(2 * s2 * math.log(3 / delta) / m) + 3 * U * math.log(3 / delta) / m


def brute_force_log_evidence(t: float, s2: float, m: int, U: float) -> float:
    """Solve |T| = B(m, s2, delta, U) numerically for L = ln(3 / delta)."""
    if t == 0:
        return 0.0
    return optimize.brentq(
        lambda L: math.sqrt(2 * s2 * L / m) + 3 * U * L / m - abs(t),  # B with L = ln(3/delta)
        0.0,
        m * abs(t) / (3 * U) + 1.0,  # B >= 3 U L / m, so the root lies below
        xtol=1e-300,
        rtol=1e-14,
    )


def test_bound_hand_computed():
    # ln(3/0.05) = ln 60 = 4.0943446; sqrt(2 * 0.25 * 4.0943446 / 100) = 0.1430794;
    # 3 * 1 * 4.0943446 / 100 = 0.1228303; sum 0.2659098.
    assert empirical_bernstein_bound(100, 0.25, 0.05, 1.0) == pytest.approx(0.2659098, abs=1e-7)
    # s2 = 0: only the range term, 3 * 2 * ln(30) / 50 = 0.4081436
    assert empirical_bernstein_bound(50, 0.0, 0.1, 2.0) == pytest.approx(0.4081436, abs=1e-7)


def test_pvalue_hand_computed():
    # m/(9U^2) = 400/36 = 11.1111; s2 + 3U|T| = 0.64; s sqrt(s2 + 6U|T|) = 0.2 sqrt(1.24) = 0.2227106
    # exponent 11.1111 * 0.4172894 = 4.636549; p = 3 exp(-4.636549) = 0.0290732
    assert bernstein_pvalue(0.1, 0.04, 400, 2.0) == pytest.approx(0.0290732, abs=1e-7)
    assert bernstein_pvalue(-0.1, 0.04, 400, 2.0) == bernstein_pvalue(0.1, 0.04, 400, 2.0)
    # s2 = 0: exponent m |T| / (3 U) = 200 * 0.05 / 4.5 = 2.2222; p = 3 exp(-2.2222) = 0.3251041
    assert bernstein_pvalue(0.05, 0.0, 200, 1.5) == pytest.approx(0.3251041, abs=1e-7)


def test_pvalue_matches_numerical_solution_of_the_bound():
    rng = np.random.default_rng(0)
    for _ in range(300):
        m = int(rng.integers(2, 20_000))
        U = float(rng.choice([1.0, 1.5, 2.0]))
        s2 = float(rng.uniform(0, 0.5)) * float(rng.choice([0.0, 1e-4, 1.0]))
        t = float(rng.uniform(-1, U - 1)) * float(rng.choice([1e-3, 0.1, 1.0]))
        assert empirical_bernstein_bound(m, s2, 0.05, U) == pytest.approx(reference_bound(m, s2, 0.05, U))
        expected = brute_force_log_evidence(t, s2, m, U)
        assert bernstein_log_evidence(t, s2, m, U) == pytest.approx(expected, rel=1e-9, abs=1e-12)
        assert bernstein_pvalue(t, s2, m, U) == pytest.approx(
            min(1.0, 3 * math.exp(-expected)), rel=1e-8, abs=1e-300
        )


def test_pvalue_is_the_smallest_rejecting_delta():
    t, s2, m, U = 0.03, 0.05, 2000, 2.0
    p = bernstein_pvalue(t, s2, m, U)
    assert 0 < p < 1
    assert abs(t) > empirical_bernstein_bound(m, s2, p * 1.001, U)
    assert abs(t) < empirical_bernstein_bound(m, s2, p * 0.999, U)


def test_pvalue_edge_cases():
    assert bernstein_pvalue(0.0, 0.3, 100, 2.0) == 1.0  # T = 0: the formula gives 3, capped
    assert bernstein_pvalue(0.0, 0.0, 100, 2.0) == 1.0
    assert bernstein_pvalue(1e-6, 0.2, 1000, 2.0) == 1.0
    assert bernstein_pvalue(0.9, 0.0, 10_000, 2.0) == 0.0  # underflows to 0, not NaN


def test_log_evidence_is_accurate_where_the_textbook_form_cancels():
    s2, m, U = 0.25, 10_000, 2.0
    t = 1e-9
    naive = m / (9 * U**2) * (s2 + 3 * U * t - math.sqrt(s2) * math.sqrt(s2 + 6 * U * t))
    stable = bernstein_log_evidence(t, s2, m, U)
    # to first order in T the exponent is m T^2 / (2 s2)
    assert stable == pytest.approx(m * t**2 / (2 * s2), rel=1e-6)
    assert abs(naive - stable) > 0.1 * stable  # the textbook form has lost most digits here


def test_interval():
    values = np.array([0.0, 1.0, 1.0, 0.0, 1.0])
    ci = bernstein_interval(values, 0.05, 1.0)
    half = empirical_bernstein_bound(5, 0.24, 0.05, 1.0)
    assert (ci.low, ci.high) == pytest.approx((0.6 - half, 0.6 + half))
    assert 0.6 in ci and 5.0 not in ci
    assert ConfidenceInterval(0, 1).disjoint(ConfidenceInterval(1.5, 2))
    assert not ConfidenceInterval(0, 1).disjoint(ConfidenceInterval(0.5, 2))


def test_interval_covers_the_mean_often_enough():
    rng = np.random.default_rng(1)
    covered = [0.3 in bernstein_interval(rng.binomial(1, 0.3, 50).astype(float), 0.1, 1.0) for _ in range(500)]
    assert np.mean(covered) >= 0.9


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: empirical_bernstein_bound(1, 0.1, 0.05, 1.0), "`m` must be an integer >= 2; got 1"),
        (lambda: empirical_bernstein_bound(10, -0.1, 0.05, 1.0), "`s2` must be in"),
        (lambda: empirical_bernstein_bound(10, 0.1, 0.0, 1.0), "`delta` must be in"),
        (lambda: empirical_bernstein_bound(10, 0.1, 0.05, 0.0), "`U` must be in"),
        (lambda: bernstein_pvalue(float("nan"), 0.1, 10, 1.0), "`statistic` must be finite"),
        (lambda: bernstein_interval(np.array([0.0, 3.0]), 0.05, 1.0), "more than the range `U`"),
        (lambda: bernstein_interval(np.array([0.5]), 0.05, 1.0), "at least 2"),
    ],
)
def test_bad_input(call, message):
    with pytest.raises(InputError, match=message):
        call()
