"""fitaudit.labels: label problems by confident learning (cleanlab) and exact conflicting labels.

* on digits (a scaled logistic regression, 60/40 stratified split) with 5% of
  the test labels changed, recall and precision are at least cleanlab's own
  on the same probabilities, and at most 2 rows are flagged on the clean test set;
* equal rows with different labels are found, in tables and in image arrays;
* the verdict is the corrected accuracy against the measured interval, by hand;
* bad input is a clear InputError naming the argument.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from fitaudit import InputError
from fitaudit.labels import LabelResult, find_label_problems
from fitaudit.labels.decision import rows_to_leave_interval
from fitaudit.results import load_result
from fitaudit.stats import binomial_interval

cleanlab_filter = pytest.importorskip("cleanlab.filter")


@pytest.fixture(scope="module")
def digits():
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x, y = load_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.4, stratify=y, random_state=0)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)).fit(x_train, y_train)
    return x_test, y_test, model.predict_proba(x_test)


def _changed(y, share, seed):
    rng = np.random.default_rng(seed)
    rows = rng.choice(len(y), int(round(share * len(y))), replace=False)
    noisy = y.copy()
    noisy[rows] = (noisy[rows] + rng.integers(1, 10, len(rows))) % 10
    truth = np.zeros(len(y), dtype=bool)
    truth[rows] = True
    return noisy, truth


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_changed_digit_labels_are_found_at_least_as_well_as_by_cleanlab(digits, seed):
    x, y, probabilities = digits
    noisy, truth = _changed(y, 0.05, seed)
    result = find_label_problems(x, noisy, probabilities)
    ours = np.zeros(len(y), dtype=bool)
    ours[result.flagged] = True
    theirs = cleanlab_filter.find_label_issues(noisy, probabilities, n_jobs=1)
    recall, precision = (ours & truth).sum() / truth.sum(), (ours & truth).sum() / ours.sum()
    their_recall, their_precision = (theirs & truth).sum() / truth.sum(), (theirs & truth).sum() / theirs.sum()
    assert recall >= their_recall and precision >= their_precision and recall >= 0.85
    verdict = result.verdict()
    assert verdict.status == "fail" and result.corrected_accuracy > result.high
    assert result.rows[0]["label_probability"] <= result.rows[-1]["label_probability"]  # worst label first


def test_few_rows_are_flagged_on_the_clean_test_set(digits):
    x, y, probabilities = digits
    result = find_label_problems(x, y, probabilities)
    assert result.n_flagged <= 2 and result.verdict().status == "pass"
    assert result.conflict_groups == 0 and result.by_conflict == 0


def test_equal_rows_with_different_labels_are_flagged():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.integers(0, 50, 300), "b": rng.choice(["x", "y"], 300)},
                         index=[f"r{i}" for i in range(300)])
    frame.loc["r7"] = frame.loc["r3"]  # r3 and r7 equal, labels 0 and 1: the model says 0
    frame.loc["r9", "a"] = np.nan
    frame.loc["r11"] = frame.loc["r9"]  # equal with a missing value, the same label: no conflict
    y = np.zeros(300, dtype=int)
    y[7] = 1
    probabilities = np.tile([0.6, 0.4], (300, 1))  # unsure everywhere: confident learning flags nothing
    result = find_label_problems(frame, y, probabilities, class_names=["no", "yes"])
    assert result.by_confident_learning == 0 and result.conflict_groups == 1
    assert result.flagged.tolist() == [7] and result.rows[0]["index"] == "r7"
    assert result.rows[0]["values"] == {"a": frame.loc["r7", "a"], "b": frame.loc["r7", "b"]}
    assert result.rows[0]["found_by"] == "conflicting labels" and result.class_name(1) == "yes"
    images = rng.random((40, 1, 4, 4))
    images[5] = images[2]
    labels = np.zeros(40, dtype=int)
    labels[5] = 1
    on_images = find_label_problems(images, labels, np.tile([0.7, 0.3], (40, 1)))
    assert on_images.flagged.tolist() == [5] and on_images.rows[0]["values"] is None


def test_the_verdict_is_the_corrected_accuracy_against_the_interval():
    n = 400
    y = np.zeros(n, dtype=int)
    probabilities = np.tile([0.97, 0.03], (n, 1))
    for changed, status in ((3, "pass"), (30, "fail")):
        labels = y.copy()
        labels[:changed] = 1  # the model is sure these are 0
        result = find_label_problems(None, labels, probabilities)
        measured = binomial_interval(n - changed, n)
        assert set(result.flagged.tolist()) <= set(range(changed)) and result.n_flagged >= 0.6 * changed
        assert (result.correct, result.corrected_correct) == (n - changed, n - changed + result.n_flagged)
        assert (result.low, result.high) == pytest.approx((measured.low, measured.high))
        corrected = (n - changed + result.n_flagged) / n
        assert result.verdict().status == status == ("fail" if corrected > measured.high else "pass")
        # 400 confident rows at 0.97: up to the 95% quantile of Binomial(400, 0.03) disagree by the model's uncertainty
        from scipy import stats

        assert result.explained_confident_errors == stats.binom.ppf(0.95, 400, 0.03)
        assert result.unexplained == max(0, min(changed - result.explained_confident_errors, result.n_flagged))
        needed = rows_to_leave_interval(result)
        assert (n - changed + needed) / n > measured.high >= (n - changed + needed - 1) / n


@pytest.mark.parametrize("call, message", [
    (lambda y, p: find_label_problems(None, y, p[:, :1]), r"`probabilities` must have shape \(50, n_classes >= 2\)"),
    (lambda y, p: find_label_problems(None, y, np.log(p)), "must be probabilities in"),
    (lambda y, p: find_label_problems(None, y, p * 2 / 3), "rows must sum to 1"),
    (lambda y, p: find_label_problems(None, np.full(50, 4), p), "the label 4, which the model never saw"),
    (lambda y, p: find_label_problems(None, y.astype(str), p), "`y_true` must hold class indices"),
    (lambda y, p: find_label_problems(np.zeros((10, 2)), y, p), "`X` has 10 rows but `y_true` has 50 labels"),
    (lambda y, p: find_label_problems(None, y, p, class_names=["a"]), "`class_names` has 1 names"),
])
def test_bad_input_is_an_input_error(call, message):
    rng = np.random.default_rng(0)
    probabilities = rng.dirichlet(np.ones(3), 50)
    with pytest.raises(InputError, match=message):
        call(rng.integers(0, 3, 50), probabilities)


def test_a_saved_result_reads_back_and_an_edited_one_is_refused(digits):
    x, y, probabilities = digits
    noisy, _ = _changed(y, 0.05, 0)
    result = find_label_problems(pd.DataFrame(x).add_prefix("pixel "), noisy, probabilities)
    saved = json.loads(result.to_json())
    back = load_result(saved, LabelResult)
    assert back.verdict() == result.verdict() and back.flagged.tolist() == result.flagged.tolist()
    saved["corrected_correct"] = saved["correct"] - 1
    with pytest.raises(InputError, match="corrected"):
        load_result(saved, LabelResult)


def test_honest_labels_of_overlapping_classes_fail_at_most_at_the_level():
    """Labels drawn from the model's own probabilities: confident learning flags many, the check rarely fails."""
    rng = np.random.default_rng(3)
    fails = inconclusive = 0
    for _ in range(40):
        probabilities = rng.dirichlet([2.0, 1.0, 0.5], 600)[:, rng.permutation(3)]
        labels = np.array([rng.choice(3, p=row) for row in probabilities])
        verdict = find_label_problems(None, labels, probabilities).verdict()
        fails += verdict.status == "fail"
        inconclusive += verdict.reason == "explained_by_model_uncertainty"
    assert fails <= 5 and inconclusive >= 20  # binomial(40, 0.05): P(more than 5) < 2%


def test_the_poisson_binomial_tail_is_exact_then_refined_normal(monkeypatch):
    from scipy import stats

    import fitaudit.labels.result as labels_result
    from fitaudit.labels.result import poisson_binomial_sf

    rng = np.random.default_rng(4)
    q = rng.random(3000) * 0.2
    for k in (0, 250, 300, 360, 3001):
        exact = stats.poisson_binom(q).sf(k - 1) if 0 < k <= q.size else float(k <= 0)
        assert poisson_binomial_sf(k, q) == pytest.approx(exact, rel=1e-9, abs=1e-12)
        monkeypatch.setattr(labels_result, "EXACT_TAIL", 0)
        assert poisson_binomial_sf(k, q) == pytest.approx(exact, rel=0.02, abs=1e-4)
        monkeypatch.setattr(labels_result, "EXACT_TAIL", 5000)
