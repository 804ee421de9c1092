"""Agreement between runs (Jiang et al., ICLR 2022): 1 - disagreement with its exact interval."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from fitaudit import InputError
from fitaudit.results import Result
from fitaudit.stats import AgreementResult, accuracy, agreement


def test_hand_count() -> None:
    ours = [0, 1, 2, 2, 1, 0, 0, 1]
    theirs = [0, 1, 1, 2, 1, 2, 0, 0]
    # agree at positions 0, 1, 3, 4, 6: 5 of 8
    result = agreement(ours, theirs)
    assert (result.agree, result.n) == (5, 8)
    assert result.estimate == pytest.approx(5 / 8)
    assert result.disagreement == pytest.approx(3 / 8)
    ci = stats.binomtest(5, 8).proportion_ci(0.95, method="exact")
    assert (result.low, result.high) == pytest.approx((ci.low, ci.high))
    assert result.measured is None and result.measured_above() is None and result.gap is None


def test_scores_are_argmaxed_and_class_counts_checked() -> None:
    scores = np.array([[0.1, 0.9, 0.0], [0.8, 0.1, 0.1], [0.2, 0.2, 0.6]])
    assert agreement(scores, [1, 0, 0]).agree == 2
    with pytest.raises(InputError, match=r"`other_predictions` comes from a run with 2 classes .* 3"):
        agreement(scores, np.zeros((3, 2)))
    with pytest.raises(InputError, match=r"`other_predictions` comes from a run with 4 classes"):
        agreement([0, 1, 2], [0, 1, 2], n_classes=3, other_n_classes=4)


def test_measured_above_only_beyond_both_intervals() -> None:
    n = 1000
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, n)
    ours = y.copy()
    ours[:50] = 1 - ours[:50]  # measured accuracy 0.95
    theirs = ours.copy()
    theirs[50:250] = 1 - theirs[50:250]  # the runs agree on 0.80
    far = agreement(ours, theirs, measured=accuracy(y, ours))
    assert far.estimate == pytest.approx(0.8) and far.gap == pytest.approx(0.15)
    assert far.measured_above() is True
    close = ours.copy()
    close[50:80] = 1 - close[50:80]  # agreement 0.97: above the measured 0.95, no verdict
    assert agreement(ours, close, measured=accuracy(y, ours)).measured_above() is False
    # a gap inside the intervals: 0.95 vs 0.93 on 1,000 inputs overlaps at 95%
    near = ours.copy()
    near[50:120] = 1 - near[50:120]
    result = agreement(ours, near, measured=accuracy(y, ours))
    assert result.gap == pytest.approx(0.02) and result.measured_above() is False
    assert result.measured_above(0.5) is True  # narrower intervals separate them


def test_round_trip_keeps_the_measured_accuracy() -> None:
    result = agreement([0, 1, 1, 0], [0, 1, 0, 0], measured=accuracy([0, 1, 1, 1], [0, 1, 1, 0]))
    again = Result.from_dict(result.to_dict())
    assert isinstance(again, AgreementResult)
    assert again.measured is not None and again.measured.correct == 3
    assert again.measured_above() == result.measured_above()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"predictions": [0, 1, 1], "other_predictions": [0, 1]}, r"`other_predictions` has 2 predictions"),
        ({"predictions": [0], "other_predictions": [0]}, r"`predictions` must cover at least 2 inputs; got 1"),
        (
            {"predictions": [0, 1], "other_predictions": [0, 1], "measured": accuracy([0, 1, 1], [0, 1, 1])},
            r"`measured` was computed on 3 examples",
        ),
        ({"predictions": [0, -1], "other_predictions": [0, 1]}, r"`predictions` must be non-negative"),
    ],
)
def test_bad_input_names_the_argument(kwargs, message: str) -> None:
    with pytest.raises(InputError, match=message):
        agreement(**kwargs)


def test_chosen_run_agreement_by_hand() -> None:
    from fitaudit.stats.agreement import chosen_run_agreement

    y = np.array([0, 1, 1, 0, 1, 0])
    runs = np.array([[0, 1, 1, 0, 1, 1], [0, 1, 0, 0, 1, 0], [1, 1, 1, 0, 0, 0]])
    result = chosen_run_agreement(runs, y, 0)  # run 0 (5 of 6 right) against run 1: agree on 4 of 6
    assert (result.agree, result.n) == (4, 6) and result.measured.correct == 5
    assert chosen_run_agreement(runs, y, 2, other=0).agree == 3
    with pytest.raises(InputError, match=r"`other` must be another run"):
        chosen_run_agreement(runs, y, 1, other=1)
    with pytest.raises(InputError, match=r"`run_predictions` must have shape \(R, n\) with R >= 2"):
        chosen_run_agreement(runs[:1], y, 0)
