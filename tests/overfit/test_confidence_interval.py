"""OverfitTestResult.confidence_interval (Werpachowski et al. 2019, Sec. 3): T +- B at a level."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.data import GaussianMargin
from fitaudit.overfit import LinearGradientAEG, overfit_test


@pytest.fixture(scope="module")
def result():
    from sklearn.linear_model import LogisticRegression

    dist = GaussianMargin(20)
    x_train, y_train = dist.sample(300, random_state=30)
    x, y = dist.sample(400, random_state=31)
    return overfit_test(LogisticRegression().fit(x_train, y_train), x, y, LinearGradientAEG(2.0, dist))


def test_interval_is_t_plus_minus_the_hand_computed_bernstein_bound(result) -> None:
    for level in (0.9, 0.95, 0.99):
        log_term = math.log(3.0 / (1.0 - level))
        half = math.sqrt(2.0 * result.pairwise.variance * log_term / result.m) + 3.0 * result.U * log_term / result.m
        ci = result.confidence_interval(level)
        assert ci.low == pytest.approx(result.statistic - half)
        assert ci.high == pytest.approx(result.statistic + half)
        assert result.confidence_interval(confidence_level=level) == ci
        assert (0.0 not in ci) == result.pairwise.rejects_at(1.0 - level)


def test_default_is_the_stored_level_and_wider_levels_give_wider_intervals(result) -> None:
    stored = result.confidence_interval()
    again = result.confidence_interval(1.0 - result.delta)
    assert (stored.low, stored.high) == pytest.approx((again.low, again.high))
    assert stored.high - stored.low == pytest.approx(2 * result.pairwise.bound)
    narrow, wide = result.confidence_interval(0.8), result.confidence_interval(0.999)
    assert wide.low < narrow.low < narrow.high < wide.high


def test_a_level_that_reads_like_a_delta_is_refused(result) -> None:
    with pytest.raises(InputError, match="confidence_level=0.95"):
        result.confidence_interval(0.05)
    with pytest.raises(InputError, match="confidence_level"):
        result.confidence_interval(1.0)
    assert np.isfinite(result.confidence_interval(0.5).low)


def test_n_scored_is_the_papers_m(result) -> None:
    assert result.n_scored == result.m == 400 == result.pairwise.n_scored
