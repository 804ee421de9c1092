"""PMV's underfit rule: relative to the majority-class learner, not an absolute training accuracy."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from fitaudit.pmv.baseline import BASELINE_GAIN
from fitaudit.pmv.decision import GOOD_FIT_SLOPE, UNDERFIT_GAIN, pmv_verdict
from fitaudit.report.verdicts import say_pmv

RATES = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 0.5])


def hand_built(clean: float, majority: float, slope: float) -> SimpleNamespace:
    """A PMV result whose accuracy falls from ``clean`` by ``slope`` per unit of noise, beside a majority-class
    learner with share ``majority`` (the fields :func:`pmv_verdict` reads, nothing fitted)."""
    return SimpleNamespace(criterion="pmv", statistic=slope, score=slope, bound=0.5, delta=0.05, rates=RATES,
                           mean_accuracy=clean - slope * RATES, baseline_accuracy=majority - 0.1 * RATES,
                           baseline_statistic=0.1)


def test_a_weak_learner_on_noisy_many_class_data_is_not_called_an_underfit() -> None:
    """seattle-weather's case: the best held-out learner fits 0.7 of its clean labels against a majority share
    of 0.45; the old 0.75 cut-off failed it."""
    result = hand_built(clean=0.70, majority=0.45, slope=0.6)
    assert (0.70 - 0.45) / (1 - 0.45) >= UNDERFIT_GAIN  # removes 45% of the majority learner's errors
    verdict = pmv_verdict(result)
    assert verdict.status == "pass" and verdict.reason == "fits_signal"


def test_a_learner_near_a_large_majority_class_underfits_whatever_its_accuracy() -> None:
    """A 90/10 table: 0.92 clean accuracy passed the old 0.75 cut-off, but removes only 20% of the errors of
    always predicting the largest class."""
    result = hand_built(clean=0.92, majority=0.90, slope=0.8)
    verdict = pmv_verdict(result)
    assert verdict.status == "fail" and verdict.reason == "underfits"
    assert verdict.numbers["baseline_gain"] == pytest.approx(0.2)
    assert verdict.numbers["underfit_gain"] == UNDERFIT_GAIN
    sentence = say_pmv(result, verdict)
    assert "removes 20% of the errors of always predicting the largest class" in sentence
    assert f"below {UNDERFIT_GAIN:.0%}" in sentence and "fits the signal" not in sentence


@pytest.mark.parametrize("gain, status", [(UNDERFIT_GAIN - 0.01, "fail"), (UNDERFIT_GAIN, "pass")])
def test_the_cut_is_the_share_of_the_majority_learners_errors_removed(gain, status) -> None:
    majority = 0.6
    result = hand_built(clean=majority + gain * (1 - majority), majority=majority, slope=GOOD_FIT_SLOPE + 0.1)
    assert pmv_verdict(result).status == status
    assert pmv_verdict(result, underfit_gain=BASELINE_GAIN).status == "pass"  # the cut is an argument


def test_the_pass_says_what_it_does_not_predict() -> None:
    result = hand_built(clean=0.95, majority=0.5, slope=0.8)
    sentence = say_pmv(result, pmv_verdict(result))
    assert "fits the signal rather than the noise" in sentence
    assert "it does not say this learner is the best one here" in sentence
