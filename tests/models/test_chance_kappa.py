"""The chance stop's lower confidence bound of Cohen's kappa (models.labels.kappa_lower_bound) and its verdict."""

from __future__ import annotations

import types

import numpy as np
import pytest

from fitaudit.models.labels import CHANCE_CONFIDENCE, chance_check, kappa_lower_bound
from fitaudit.overfit.decision import overfit_verdict
from fitaudit.report.overfit_words import inconclusive_words


def test_the_bound_matches_statsmodels_fleiss_cohen_everitt_variance():
    """statsmodels' cohens_kappa (an independent implementation of the same large-sample variance)."""
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    from scipy.stats import norm

    rng = np.random.default_rng(0)
    for k in (2, 3, 5, 12):
        table = rng.integers(0, 15, size=(k, k)) + np.diag(rng.integers(0, 20, size=k))
        reference = inter_rater.cohens_kappa(table)
        expected = reference["kappa"] - norm.ppf(CHANCE_CONFIDENCE) * reference["std_kappa"]
        assert kappa_lower_bound(table) == pytest.approx(expected, abs=1e-12)


def test_the_bound_covers_the_true_kappa_95_percent_of_the_time():
    """Calibration: samples of n = 200 from a fixed 4-class table; the one-sided bound lies below the true kappa."""
    rng = np.random.default_rng(1)
    p = np.full((4, 4), 0.03) + np.diag([0.12, 0.1, 0.08, 0.06])
    p /= p.sum()
    rows, cols = p.sum(1), p.sum(0)
    true_kappa = (np.trace(p) - rows @ cols) / (1 - rows @ cols)
    cells = rng.choice(16, size=(2000, 200), p=p.ravel())
    covered = np.mean([kappa_lower_bound(np.bincount(c, minlength=16).reshape(4, 4)) <= true_kappa for c in cells])
    assert abs(covered - CHANCE_CONFIDENCE) < 0.025


def test_an_untrained_model_at_a_lucky_accuracy_is_not_shown_above_chance():
    """The issue's case: 12 classes, accuracy 0.067 just above the 0.06 chance of its skewed answers."""
    rng = np.random.default_rng(2)
    truth = rng.integers(0, 12, size=300)
    predicted = np.where(rng.random(300) < 0.7, 3, rng.integers(0, 12, size=300))  # mostly one class
    predicted[:3] = truth[:3]  # a little luck
    check = chance_check(truth, predicted, 12)
    assert check.kappa > 0 and not check.at_or_below  # the old rule read it as above chance
    assert check.kappa_low < 0 and not check.shown_above
    strong = chance_check(truth, np.where(rng.random(300) < 0.3, truth, predicted), 12)
    assert strong.shown_above


def _result(chance):
    return types.SimpleNamespace(pvalue=0.5, delta=0.05, statistic=0.0, reject=False, chance=chance, m=300,
                                 U=1.5, variance=0.0, n_success=100)


def test_a_model_not_shown_above_chance_is_inconclusive_and_says_why():
    lucky = chance_check([0, 1, 2, 0, 1, 2, 0, 1, 2, 0], [0, 1, 2, 0, 2, 0, 1, 2, 0, 1], 3)  # 0.4 vs 0.34
    assert lucky.kappa > 0 and not lucky.shown_above
    verdict = overfit_verdict(_result(lucky))
    assert (verdict.status, verdict.reason) == ("inconclusive", "accuracy_not_shown_above_chance")
    words = inconclusive_words(_result(lucky), verdict)
    assert words.startswith(f"Inconclusive: accuracy {lucky.accuracy:.3f} is not shown above chance (kappa's lower "
                            f"bound {lucky.kappa_low:.3f} is not above 0). ")  # the headline, then why
    assert (f"The model's accuracy on these 10 examples, {lucky.accuracy:.3f}, is not shown above "
            f"chance ({lucky.chance:.3f}): Cohen's kappa {lucky.kappa:.3f}, its 95% lower bound "
            f"{lucky.kappa_low:.3f} is not above 0") in words
    clear = chance_check(np.repeat([0, 1, 2], 20), np.repeat([0, 1, 2], 20), 3)
    assert overfit_verdict(_result(clear)).status == "pass"


def test_a_saved_check_without_the_bound_reads_as_before():
    from fitaudit.models.labels import ChanceCheck

    old = ChanceCheck(accuracy=0.4, chance=0.3, n=10)
    assert old.kappa_low is None and old.shown_above
