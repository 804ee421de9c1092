"""The baseline check (issue 48): the model against the majority class and a scaled logistic regression.

References: scipy's binomtest and a plain loop for the counts and tests,
brute-force power for the detectable difference, simulation for the level,
and the breast_cancer cases of the issue (60/40 stratified split): the
depth-1 tree fails, the honest scaled logistic regression passes.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom, binomtest
from sklearn.datasets import load_breast_cancer
from sklearn.dummy import DummyClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

from fitaudit._errors import InputError
from fitaudit.baseline import (
    MATERIAL_GAP,
    REFERENCE,
    BaselineResult,
    baseline_check,
    compare_with_baselines,
    detectable_difference,
    fit_reference,
    paired_interval,
)
from fitaudit.report.verdicts import read
from fitaudit.results import load_result


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return train_test_split(X, y, test_size=0.4, stratify=y, random_state=0)


def _loop_counts(truth, own, other):
    wins = sum(1 for t, a, b in zip(truth, own, other) if a == t and b != t)
    losses = sum(1 for t, a, b in zip(truth, own, other) if a != t and b == t)
    return wins, losses


def test_counts_and_pvalues_match_a_plain_loop_and_scipy():
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 3, 300)
    own = np.where(rng.random(300) < 0.8, truth, rng.integers(0, 3, 300))
    other = np.where(rng.random(300) < 0.7, truth, rng.integers(0, 3, 300))
    result = baseline_check(truth, own, reference_pred=other, majority_label=1)
    wins, losses = _loop_counts(truth, own, other)
    assert (result.wins_vs_reference, result.losses_vs_reference) == (wins, losses)
    assert _loop_counts(truth, own, np.ones(300, int)) == (result.wins_vs_majority, result.losses_vs_majority)
    assert result.pvalue_below_reference() == pytest.approx(
        binomtest(losses, wins + losses, 0.5, alternative="greater").pvalue)
    assert result.accuracy == pytest.approx(np.mean(own == truth))
    assert result.reference_accuracy - result.accuracy == pytest.approx((losses - wins) / 300)


@pytest.mark.slow
def test_the_interval_excludes_zero_exactly_when_the_exact_test_rejects():
    for wins in range(0, 30):
        for losses in range(0, 30):
            if wins + losses == 0:
                continue
            low, high = paired_interval(wins, losses, 200, 0.95)
            assert low <= (wins - losses) / 200 <= high
            above = binomtest(wins, wins + losses, 0.5, alternative="greater").pvalue < 0.025
            below = binomtest(losses, wins + losses, 0.5, alternative="greater").pvalue < 0.025
            assert (low > 0) == above and (high < 0) == below


def test_the_detectable_difference_has_the_stated_power():
    for discordant, n in ((40, 400), (100, 228), (300, 10000)):
        d = detectable_difference(discordant, n, 0.025)
        k = next(k for k in range(discordant + 1) if binom.sf(k - 1, discordant, 0.5) < 0.025)
        q = 0.5 + d * n / (2 * discordant)
        assert binom.sf(k - 1, discordant, q) == pytest.approx(0.8, abs=1e-6)
        assert binom.sf(k - 1, discordant, q - 0.01) < 0.8
    assert math.isnan(detectable_difference(5, 228, 0.025))  # 0.5^5 > 0.025: no count of 5 rejects


def test_equally_accurate_models_fail_at_most_at_the_level():
    """Simulation: model and reference equally accurate (a discordant row is a win or a loss at 1/2)."""
    rng = np.random.default_rng(1)
    fails = 0
    for _ in range(2000):
        truth = rng.integers(0, 2, 400)
        own = np.where(rng.random(400) < 0.85, truth, 1 - truth)
        other = np.where(rng.random(400) < 0.85, truth, 1 - truth)
        result = baseline_check(truth, own, reference_pred=other, majority_label=0)
        fails += result.pvalue_below_reference() < 0.025  # the rule (its interval ends below 0: the test above)
    assert fails / 2000 <= 0.025 + 3 * math.sqrt(0.025 * 0.975 / 2000)


def test_the_stump_fails_and_the_honest_model_passes_on_breast_cancer(cancer):
    X_train, X_test, y_train, y_test = cancer
    stump = DecisionTreeClassifier(max_depth=1, random_state=0).fit(X_train, y_train)
    honest = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(X_train, y_train)
    failed = compare_with_baselines(stump, X_test, y_test, X_train=X_train, y_train=y_train)
    assert (round(failed.accuracy, 3), round(failed.reference_accuracy, 3)) == (0.904, 0.965)  # the numbers
    verdict = failed.verdict()
    assert verdict.status == "fail" and verdict.reason == "worse_than_reference"
    assert verdict.numbers["difference_high"] < 0 and verdict.numbers["pvalue_below_reference"] < 0.025
    passed = compare_with_baselines(honest, X_test, y_test, X_train=X_train, y_train=y_train).verdict()
    assert (passed.status, passed.reason) == ("pass", "beats_baselines")
    status, sentence = read(failed)
    assert status == "fail" and sentence.startswith("Fails: the model is less accurate than a scaled logistic "
                                                    "regression (accuracy difference -0.061).")
    assert "0.904" in sentence and "0.965" in sentence and "wins 2 and loses 16" in sentence


def test_without_training_data_only_the_majority_class_and_what_is_missing(cancer):
    X_train, X_test, y_train, y_test = cancer
    stump = DecisionTreeClassifier(max_depth=1, random_state=0).fit(X_train, y_train)
    result = compare_with_baselines(stump, X_test, y_test)
    assert result.reference is None and result.majority_source == "scored labels"
    assert (result.verdict().status, result.verdict().reason) == ("pass", "beats_majority")
    assert "Not compared with a reference learner: no training data was given" in read(result).sentence


def test_a_constant_model_fails_and_few_rows_cannot_tell(cancer):
    X_train, X_test, y_train, y_test = cancer
    constant = DummyClassifier(strategy="most_frequent").fit(X_train, y_train)
    result = compare_with_baselines(constant, X_test, y_test, y_train=y_train)
    assert result.verdict().reason == "no_better_than_majority" and result.majority_interval() == (0.0, 0.0)
    truth = np.array([0, 1, 1, 0, 1, 0, 1, 1, 0, 1])
    few = baseline_check(truth, np.array([0, 1, 1, 0, 1, 1, 1, 1, 1, 1]), majority_label=1)  # 8/10 vs 6/10
    assert few.verdict().status == "inconclusive" and few.verdict().reason == "cannot_tell_from_majority"
    assert few.majority_interval()[1] >= MATERIAL_GAP


def test_a_reference_that_cannot_rule_out_a_material_loss_is_inconclusive():
    truth = np.zeros(228, int)
    own = truth.copy()
    own[:11] = 1  # loses 11 ...
    other = truth.copy()
    other[11:15] = 1  # ... and wins 4 of 15 discordant rows: not shown worse, a 3-point loss not ruled out
    result = baseline_check(np.r_[truth[:100], 1 - truth[100:]], np.r_[own[:100], 1 - own[100:]],
                            reference_pred=np.r_[other[:100], 1 - other[100:]], majority_label=0)
    verdict = result.verdict()
    assert verdict.reason == "cannot_rule_out_loss"
    assert verdict.numbers["difference_high"] >= 0 and verdict.numbers["difference_low"] <= -MATERIAL_GAP
    assert read(result).sentence.startswith("Inconclusive: these rows cannot rule out a loss of 0.03 or more against a scaled")


def test_the_reference_takes_text_and_missing_values_and_refuses_one_class():
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"size": rng.normal(size=200), "colour": rng.choice(["red", "blue", None], 200)})
    frame.loc[::7, "size"] = np.nan
    labels = (np.nan_to_num(frame["size"].to_numpy()) + (frame["colour"] == "red") > 0.5).astype(int)
    fitted = fit_reference(frame, labels)
    assert np.mean(fitted.predict(frame) == labels) > 0.8
    with pytest.raises(InputError, match="`y_train` holds one class"):
        fit_reference(frame, np.zeros(200, int))


def test_bad_input_names_the_argument():
    with pytest.raises(InputError, match="`y_pred` has 2 predictions for the 3 rows"):
        baseline_check([0, 1, 1], [0, 1])
    with pytest.raises(InputError, match="`reference_pred`"):
        baseline_check([0, 1, 1], [0, 1, 1], reference_pred=[1])
    with pytest.raises(InputError, match="`y_true` is empty"):
        baseline_check([], [])
    with pytest.raises(InputError, match="`level`"):
        baseline_check([0, 1], [0, 1], level=1.5)


def test_a_saved_result_reads_back_and_an_edited_one_is_refused(cancer):
    X_train, X_test, y_train, y_test = cancer
    stump = DecisionTreeClassifier(max_depth=1, random_state=0).fit(X_train, y_train)
    result = compare_with_baselines(stump, X_test, y_test, X_train=X_train, y_train=y_train)
    saved = result.to_dict()
    again = load_result(saved, BaselineResult)
    assert again.verdict() == result.verdict() and again.reference == REFERENCE
    saved["reference_accuracy"] = 0.5
    with pytest.raises(InputError, match="`reference_accuracy` is 0.5, but its evidence gives 0.9649"):
        load_result(saved)
