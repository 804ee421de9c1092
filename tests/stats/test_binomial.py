"""Accuracy with its exact (Clopper-Pearson) interval, overall and per class."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from fitaudit import InputError
from fitaudit.results import Result
from fitaudit.stats import AccuracyResult, accuracy, binomial_interval


def beta_limits(k: int, n: int, level: float) -> tuple[float, float]:
    """Clopper-Pearson limits from beta quantiles (Clopper & Pearson 1934), independent of binomtest."""
    alpha = 1 - level
    low = 0.0 if k == 0 else stats.beta.ppf(alpha / 2, k, n - k + 1)
    high = 1.0 if k == n else stats.beta.ppf(1 - alpha / 2, k + 1, n - k)
    return float(low), float(high)


@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 1), (0, 10), (7, 10), (10, 10), (522, 1000), (9999, 10000)])
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_interval_matches_beta_quantiles(k: int, n: int, level: float) -> None:
    ci = binomial_interval(k, n, level)
    low, high = beta_limits(k, n, level)
    assert ci.low == pytest.approx(low, abs=1e-9)
    assert ci.high == pytest.approx(high, abs=1e-9)


def test_hand_counts_overall_and_per_class() -> None:
    y_true = [0, 0, 0, 1, 1, 2, 2, 2, 2, 2]
    y_pred = [0, 1, 0, 1, 0, 2, 2, 2, 0, 1]
    # class 0: 2 of 3; class 1: 1 of 2; class 2: 3 of 5; overall 6 of 10
    result = accuracy(y_true, y_pred, class_names=["a", "b", "c"])
    assert (result.correct, result.n) == (6, 10)
    assert result.accuracy == pytest.approx(0.6)
    assert result.class_correct.tolist() == [2, 1, 3]
    assert result.class_total.tolist() == [3, 2, 5]
    assert result.class_accuracy == pytest.approx([2 / 3, 1 / 2, 3 / 5])
    assert (result.low, result.high) == pytest.approx(beta_limits(6, 10, 0.95))
    for c, (k, n) in enumerate([(2, 3), (1, 2), (3, 5)]):
        assert (result.class_low[c], result.class_high[c]) == pytest.approx(beta_limits(k, n, 0.95))
        ci = result.class_confidence_interval(c, 0.8)
        assert (ci.low, ci.high) == pytest.approx(beta_limits(k, n, 0.8))
    ci = result.confidence_interval(0.99)
    assert (ci.low, ci.high) == pytest.approx(beta_limits(6, 10, 0.99))


@pytest.mark.slow
def test_interval_covers_true_accuracy_at_the_promised_rate() -> None:
    """Exact intervals: coverage of p = 0.7 over 2,000 draws of n = 50 is at least 95% (minus MC noise)."""
    rng = np.random.default_rng(0)
    draws = rng.binomial(50, 0.7, size=2000)
    covered = [0.7 in binomial_interval(int(k), 50) for k in draws]
    assert np.mean(covered) >= 0.94


def test_empty_class_is_nan_and_named_when_asked() -> None:
    result = accuracy([0, 0, 2, 2], [0, 1, 2, 2], n_classes=3, class_names=["cat", "dog", "owl"])
    assert result.empty_classes() == [1]
    assert np.isnan(result.class_low[1]) and np.isnan(result.class_accuracy[1])
    with pytest.raises(InputError, match=r"`label` 1: class 'dog' has no scored examples"):
        result.class_confidence_interval(1)
    with pytest.raises(InputError, match=r"`y_true` has no examples of class\(es\) 'dog'"):
        accuracy([0, 0, 2, 2], [0, 1, 2, 2], n_classes=3, class_names=["cat", "dog", "owl"], require_every_class=True)


def test_round_trip_through_json() -> None:
    result = accuracy([0, 1, 1, 0], [0, 1, 0, 0], n_classes=3)
    again = Result.from_dict(result.to_dict())
    assert isinstance(again, AccuracyResult)
    assert again.class_total.tolist() == [2, 2, 0]
    assert np.isnan(again.class_high[2])
    assert again.low == result.low


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: accuracy([0, 1, 1], [0, 1]), r"`y_pred` must have 3 entries"),
        (lambda: accuracy([], []), r"`y_true` must not be empty"),
        (lambda: accuracy([0, 3], [0, 1], n_classes=3), r"`y_true` holds label 3"),
        (lambda: accuracy([0, 1], [0, 1], confidence_level=1.0), r"`confidence_level` must be in \(0, 1\)"),
        (lambda: accuracy([0, 1], [0, 1], n_classes=3, class_names=["a", "b"]), r"`class_names` has 2 names"),
        (lambda: binomial_interval(3, 2), r"`k` must be an integer <= 2"),
        (lambda: binomial_interval(0, 0), r"`n` must be a positive integer"),
    ],
)
def test_bad_input_names_the_argument(call, message: str) -> None:
    with pytest.raises(InputError, match=message):
        call()


def test_single_example_gives_a_wide_interval() -> None:
    result = accuracy([1], [1], n_classes=2)
    assert result.accuracy == 1.0
    assert result.low == pytest.approx(0.025) and result.high == 1.0
