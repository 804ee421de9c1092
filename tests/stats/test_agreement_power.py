"""What the agreement check can see: its power against a selection gain, and its verdict."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.stats import accuracy, agreement
from fitaudit.stats.agreement import RELEVANT_GAIN, detectable_gain, rejection_probability
from fitaudit.stats.binomial import binomial_interval


@functools.cache
def _ends(k: int, n: int) -> tuple[float, float]:
    interval = binomial_interval(k, n)
    return interval.low, interval.high


def _fires(n: int, agree: int, correct: int) -> bool:
    """The check's rule (measured accuracy's exact interval above the estimate's), from cached intervals."""
    return _ends(correct, n)[0] > _ends(agree, n)[1]


def _result(n: int, agree: int, correct: int):
    """An AgreementResult with ``agree`` of ``n`` agreements and ``correct`` of ``n`` right."""
    y = np.zeros(n, dtype=np.int64)
    ours = np.where(np.arange(n) < correct, 0, 1)
    theirs = np.where(np.arange(n) < agree, ours, 1 - ours)
    return agreement(ours, theirs, measured=accuracy(y, ours))


def test_rejection_probability_by_brute_force() -> None:
    """Small n: the double sum over every (agreements, correct) pair with scipy's exact intervals."""
    from scipy import stats

    n, p, gain = 30, 0.6, 0.25
    expected = 0.0
    for j in range(n + 1):
        for k in range(n + 1):
            if _fires(n, j, k):
                expected += stats.binom.pmf(j, n, p) * stats.binom.pmf(k, n, p + gain)
    assert rejection_probability(n, p, gain) == pytest.approx(expected, rel=1e-9)
    assert rejection_probability(n, p, 0.0) < 0.01  # at no gain it nearly never fires


def test_power_matches_simulation_of_the_check() -> None:
    """Independent counts at the detectable gain: the check fires in about 80% of 1,500 draws."""
    rng = np.random.default_rng(0)
    n, p = 400, 0.85
    gain = detectable_gain(n, p)
    assert gain is not None
    draws = [(int(rng.binomial(n, p)), int(rng.binomial(n, p + gain))) for _ in range(1500)]
    for agree, correct in draws[:5]:  # the cached rule is the result's own
        assert bool(_result(n, agree, correct).measured_above()) == _fires(n, agree, correct)
    fired = [_fires(n, agree, correct) for agree, correct in draws]
    assert np.mean(fired) == pytest.approx(rejection_probability(n, p, gain), abs=0.035)
    assert rejection_probability(n, p, gain) >= 0.8 > rejection_probability(n, p, gain - 0.002)


@pytest.mark.slow
def test_power_is_conservative_when_agreement_and_correctness_go_together() -> None:
    """On the same inputs, the other run agrees more often where the model is right: power is at least as stated."""
    rng = np.random.default_rng(1)
    n, p = 1000, 0.9
    gain = detectable_gain(n, p)
    q, agree_if_wrong = p + gain, 0.3
    agree_if_right = (p - (1 - q) * agree_if_wrong) / q
    fired = []
    for _ in range(800):
        right = rng.random(n) < q
        agrees = rng.random(n) < np.where(right, agree_if_right, agree_if_wrong)
        fired.append(_fires(n, int(agrees.sum()), int(right.sum())))
    assert np.mean(fired) >= 0.8 - 0.035


@pytest.mark.slow
def test_detectable_gain_shrinks_with_n_and_bad_input() -> None:
    gains = [detectable_gain(n, 0.92) for n in (300, 1000, 10000)]
    assert gains[0] > gains[1] > gains[2] > 0
    assert gains[1] == pytest.approx(0.039, abs=0.002)  # the case: n = 1,000 at about 0.92
    assert detectable_gain(50, 0.99) is None  # even a perfect measured accuracy would not show
    with pytest.raises(InputError, match="`power` must lie strictly between 0 and 1"):
        detectable_gain(100, 0.9, power=1.0)
    with pytest.raises(InputError, match="`agreement_rate` and `agreement_rate \\+ gain` must lie in"):
        rejection_probability(100, 0.9, 0.2)


@pytest.mark.slow
def test_verdicts() -> None:
    # best of 8 runs chosen by test accuracy at n = 1,000: 0.931 measured vs 0.921 agreement: cannot be seen
    small = _result(1000, 921, 931).verdict()
    assert small.status == "inconclusive" and small.reason == "gain_below_detection"
    assert small.numbers["detectable_gain"] > RELEVANT_GAIN and small.numbers["n"] == 1000
    # a large gain on enough examples: seen
    seen = _result(2000, 1700, 1900).verdict()
    assert seen.status == "fail" and seen.reason == "measured_above_estimate"
    # no gain, enough examples to see two points: a clean pass
    clean = _result(20000, 18400, 18400).verdict()
    assert clean.status == "pass" and clean.numbers["detectable_gain"] <= RELEVANT_GAIN
    assert _result(20000, 18400, 18400).verdict(relevant_gain=0.005).status == "inconclusive"
    # runs that nearly never disagree while the model errs 20% of the time: uninformative
    copies = _result(2000, 1998, 1600).verdict()
    assert copies.status == "inconclusive" and copies.reason == "runs_nearly_never_disagree"
    alone = agreement([0, 1, 1, 0], [0, 1, 0, 0]).verdict()
    assert alone.status == "info" and alone.reason == "label_free_estimate"
