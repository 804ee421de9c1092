"""PMV's underfit rule: relative to the majority-class learner, not an absolute training accuracy."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from fitaudit.pmv.baseline import BASELINE_GAIN
from fitaudit.pmv.decision import GOOD_FIT_SLOPE, PASS_GAIN, UNDERFIT_GAIN, pmv_verdict
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
    of 0.49 (a share of 0.41 of the errors removed); the old 0.75 cut-off failed it."""
    result = hand_built(clean=0.70, majority=0.49, slope=0.6)
    verdict = pmv_verdict(result)
    assert verdict.status == "inconclusive" and verdict.reason == "fits_part_of_signal"
    sentence = say_pmv(result, verdict)
    assert "it removes 41% of the majority-class learner's errors" in sentence
    assert f"below {PASS_GAIN:.0%}" in sentence and "PMV cannot tell a learner that underfits" in sentence


def test_a_stump_that_names_two_of_three_classes_is_not_a_good_fit() -> None:
    """A depth-1 stump on three balanced classes: 0.667 clean accuracy, a share of 0.5 of the errors removed."""
    verdict = pmv_verdict(hand_built(clean=2 / 3, majority=1 / 3, slope=0.33))
    assert verdict.status == "inconclusive" and verdict.numbers["baseline_gain"] == pytest.approx(0.5)


def test_below_the_old_cut_off_only_a_learner_near_the_baseline_fails() -> None:
    """Five balanced classes: 0.74 clean accuracy (the old cut-off failed it) removes 68% of the majority-class
    learner's errors, not an underfit; 0.40 removes 25%, one."""
    assert pmv_verdict(hand_built(clean=0.74, majority=0.2, slope=0.6)).status == "inconclusive"
    assert pmv_verdict(hand_built(clean=0.40, majority=0.2, slope=0.6)).reason == "underfits"
    verdict = pmv_verdict(hand_built(clean=0.85, majority=0.2, slope=0.6))
    assert verdict.status == "pass" and verdict.numbers["baseline_gain"] >= PASS_GAIN


@pytest.mark.parametrize("gain, status", [(UNDERFIT_GAIN - 0.01, "fail"), (UNDERFIT_GAIN, "inconclusive"),
                                          (PASS_GAIN - 0.01, "inconclusive"), (PASS_GAIN, "pass")])
def test_the_cuts_are_shares_of_the_majority_learners_errors_removed(gain, status) -> None:
    majority = 0.6
    result = hand_built(clean=majority + gain * (1 - majority), majority=majority, slope=GOOD_FIT_SLOPE + 0.1)
    assert pmv_verdict(result).status == status
    assert pmv_verdict(result, underfit_gain=BASELINE_GAIN, pass_gain=BASELINE_GAIN).status == "pass"  # arguments


def test_the_pass_says_what_it_does_not_predict() -> None:
    result = hand_built(clean=0.95, majority=0.5, slope=0.8)
    sentence = say_pmv(result, pmv_verdict(result))
    assert "fits the signal rather than the noise" in sentence
    assert "it does not say this learner is the best one here" in sentence
