"""Pairwise test, CI test and estimators (Werpachowski et al. 2019, Sec. 2-3)."""

from __future__ import annotations

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.overfit import adversarial_risk, ci_test, pairwise_test, plain_risk
from fitaudit.stats import empirical_bernstein_bound


def sample_vectors(m: int, seed: int, shift: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Zero-one losses and weighted adversarial losses shaped like an AEG's output."""
    rng = np.random.default_rng(seed)
    loss = (rng.random(m) < 0.3).astype(float)
    weights = rng.uniform(0, 1, m)
    flipped = (loss == 0) & (rng.random(m) < 0.2 + shift)
    adv_loss = np.where(loss == 1, 1.0, flipped.astype(float))
    return loss, adv_loss * np.where(loss == 1, weights, 0.5 * weights)


def test_pairwise_matches_direct_computation():
    loss, weighted = sample_vectors(500, 0)
    result = pairwise_test(loss, weighted, U=1.5, delta=0.05)
    terms = weighted - loss
    t = terms.mean()
    s2 = ((terms - t) ** 2).mean()
    s = np.sqrt(s2)
    p = min(1.0, 3 * np.exp(-500 / (9 * 1.5**2) * (s2 + 4.5 * abs(t) - s * np.sqrt(s2 + 9 * abs(t)))))
    assert result.statistic == pytest.approx(t)
    assert result.variance == pytest.approx(s2)
    assert result.pvalue == pytest.approx(p)
    assert result.bound == pytest.approx(empirical_bernstein_bound(500, s2, 0.05, 1.5))
    assert result.risk_plain == pytest.approx(plain_risk(loss))
    assert result.risk_adversarial == pytest.approx(weighted.mean())
    assert result.reject == (abs(t) > result.bound) == (result.pvalue < 0.05)
    assert result.m == 500 and result.U == 1.5


def test_pairwise_rejects_clear_dependence_and_its_intervals_agree():
    loss, weighted = sample_vectors(4000, 1)
    index = np.arange(4000)
    strong = pairwise_test((index % 4 == 0).astype(float), 0.4 * (index % 4 == 1), U=2)
    assert strong.reject and strong.pvalue < 1e-6
    assert 0.0 not in strong.confidence_interval()
    result = pairwise_test(loss, weighted, U=2)
    for delta in (0.01, 0.05, 0.3):
        assert result.rejects_at(delta) == (0.0 not in result.confidence_interval(1 - delta))
        assert result.rejects_at(delta) == (result.pvalue < delta)
    ci = result.risk_plain_interval(0.1)
    assert ci.low < result.risk_plain < ci.high
    assert result.to_dict()["type"] == "PairwiseTestResult"


def test_ci_test_pvalue_is_the_smallest_level_with_disjoint_intervals():
    for seed, shift in [(2, 0.3), (3, 0.5), (4, 0.8)]:
        loss, weighted = sample_vectors(3000, seed, shift)
        result = ci_test(loss, weighted, delta=0.05)
        assert result.confidence_level == pytest.approx(0.9)
        assert result.reject == result.ci_plain.disjoint(result.ci_adversarial)
        # bisection on delta for the boundary of disjointness
        low, high = 1e-300, 0.5
        if not ci_test(loss, weighted, delta=high - 1e-12).reject:
            assert result.pvalue == 1.0  # the smallest delta is >= 1/2, so 2 delta is capped
            continue
        for _ in range(200):
            mid = np.sqrt(low * high)
            low, high = (low, mid) if ci_test(loss, weighted, delta=mid).reject else (mid, high)
        assert result.pvalue == pytest.approx(min(1.0, 2 * high), rel=1e-6)
        assert result.reject == (result.pvalue < 0.1)


def test_estimators():
    assert plain_risk([0, 1, 1, 0]) == 0.5
    assert adversarial_risk([1, 1, 0, 0]) == 0.5
    assert adversarial_risk([1, 1, 0, 0], [0.5, 1.0, 0.2, 1.0]) == pytest.approx(0.375)


def test_range_check_catches_a_too_small_U():
    loss = np.array([0.0, 0.0, 1.0])
    weighted = np.array([0.8, 0.0, 1.0])
    with pytest.raises(InputError, match=r"must lie in \[-1, U - 1\] = \[-1, 0.5\].*use U = 2"):
        pairwise_test(loss, weighted, U=1.5)
    assert pairwise_test(loss, weighted, U=2.0).statistic == pytest.approx(0.8 / 3)


@pytest.mark.parametrize(
    ("loss", "weighted", "message"),
    [
        ([0.0, np.nan, 1.0], [0.0, 0.0, 1.0], "`loss` must be finite; it holds 1 NaN"),
        ([0.0, 0.0, 1.0], [0.0, np.nan, 1.0], "`weighted_adv_loss` must be finite"),
        ([0.0, 0.5, 1.0], [0.0, 0.0, 1.0], r"`loss` must hold zero-one losses"),
        ([0.0, 0.0, 1.0], [0.0, 1.5, 1.0], r"`weighted_adv_loss` must have values in \[0, 1\]"),
        ([1.0], [1.0], "`loss` must have at least 2"),
        ([0.0, 1.0, 1.0], [0.0, 1.0], "same number of examples"),
        ([[0.0, 1.0]], [[0.0, 1.0]], "`loss` must have 1 dimension"),
    ],
)
def test_bad_input(loss, weighted, message):
    with pytest.raises(InputError, match=message):
        pairwise_test(loss, weighted)
    with pytest.raises(InputError, match=message):
        ci_test(loss, weighted)


def test_bad_levels():
    loss, weighted = sample_vectors(50, 5)
    with pytest.raises(InputError, match="`delta` must be in"):
        pairwise_test(loss, weighted, delta=1.0)
    with pytest.raises(InputError, match="`delta` must be in"):
        ci_test(loss, weighted, delta=0.5)
    with pytest.raises(InputError, match="`U` must be in"):
        pairwise_test(loss, weighted, U=-1)
