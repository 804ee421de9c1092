"""fitaudit.slices: the weak-slice search against a slow reference, scipy, statsmodels and sliceline.

* the search equals a straightforward one (tests/slices/slice_reference.py: masks,
  scipy's fisher_exact, statsmodels' Benjamini-Hochberg) on small tables;
* its exact tail equals scipy's hypergeometric one, its BH equals statsmodels',
  its SliceLine score equals the sliceline package's;
* its power is the simulated one;
* on breast_cancer a gradient boosting model fit with flipped labels where
  `worst area` is in its top fifth fails, named by worst area (or rows the
  same as its), and an honest logistic model's slices do not fail;
* a column with every value missing is skipped with its reason.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pandas as pd
import pytest
import slice_reference as reference
from scipy.stats import fisher_exact, hypergeom
from statsmodels.stats.multitest import multipletests

from fitaudit import InputError
from fitaudit.results import load_result
from fitaudit.slices import SliceResult, find_weak_slices
from fitaudit.slices.power import critical_errors, detectable_gap, flagged, power_curve
from fitaudit.slices.search import fisher_greater, hypergeom_sf, sliceline_score
from fitaudit.stats.multiple import benjamini_hochberg


def _table(n=300, seed=0):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "age": rng.integers(18, 90, n).astype(float),
        "income": rng.lognormal(10, 1, n),
        "city": rng.choice(["Graz", "Linz", "Wien"], n),
        "children": rng.integers(0, 4, n),
    })
    frame.loc[rng.random(n) < 0.15, "income"] = np.nan
    return frame, rng


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_search_equals_a_slow_straightforward_one(seed):
    frame, rng = _table(seed=seed)
    errors = rng.random(len(frame)) < 0.15
    weak = (frame["age"] > 70) & (frame["city"] == "Wien") if seed != 2 else frame["income"].isna()
    errors |= weak.to_numpy() & (rng.random(len(frame)) < 0.7)
    y = rng.integers(0, 2, len(frame))
    predicted = np.where(errors, 1 - y, y)
    result = find_weak_slices(frame, y, predicted, max_thresholds=12, pair_candidates=8)
    slow = reference.search(frame, errors.astype(float), max_thresholds=12, pair_candidates=8)
    assert (result.n_single, result.n_pairs, result.n_pair_family) == (slow["n_single"], slow["n_pairs"],
                                                                        slow["pair_family"])
    assert result.n_flagged == len(slow["flagged"]) > 0
    assert result.weakest["text"] == slow["weakest"]
    for group in result.groups:
        p, q, mask = slow["flagged"][group["text"]]
        assert group["pvalue"] == pytest.approx(p, rel=1e-7) and group["qvalue"] == pytest.approx(q, rel=1e-7)
        assert group["rows"] == mask.sum() and group["correct"] == int((~errors[mask]).sum())
        for same in group["same_rows"]:  # nearly the same rows as the group's best slice
            other = slow["flagged"][same][2]
            assert (mask & other).sum() / (mask | other).sum() >= 0.9
    best = min(slow["flagged"].items(), key=lambda kv: kv[1][0])[0]  # the first group holds the smallest p-value
    assert best in [result.groups[0]["text"], *result.groups[0]["same_rows"]]
    if seed == 2:  # named by its simplest description
        assert result.groups[0]["text"] == "income is missing"


def test_the_groups_are_distinct_weaknesses():
    """Every flagged slice is in one group; a later group's best slice is still weak outside the earlier ones."""
    frame, rng = _table(n=2000, seed=3)
    errors = rng.random(2000) < 0.1
    errors |= (frame["age"] > 75).to_numpy() & (rng.random(2000) < 0.6)
    errors |= (frame["city"] == "Linz").to_numpy() & (frame["children"] == 0).to_numpy() & (rng.random(2000) < 0.5)
    y = np.zeros(2000, dtype=int)
    result = find_weak_slices(frame, y, errors.astype(int))
    texts = [g["text"] for g in result.groups]
    assert result.verdict().status == "fail" and len(texts) == result.n_groups >= 2
    assert texts[0].startswith("age > 7")
    assert any("city = Linz" in t and "children = 0" in t for t in texts)
    assert sum(1 + g["n_same"] + g["n_explained"] for g in result.groups) == result.n_flagged
    for g in result.groups[1:]:
        assert g["rows_outside_earlier"] >= result.min_rows and g["pvalue_outside_earlier"] <= 0.05


def test_the_exact_tail_is_scipy_s():
    rng = np.random.default_rng(0)
    for _ in range(400):
        n = int(rng.choice([7, 60, 900, 50_000]))
        good, draws = int(rng.integers(0, n + 1)), int(rng.integers(0, n + 1))
        k = int(rng.integers(0, min(good, draws) + 2))
        expected = hypergeom.sf(k - 1, n, good, draws)
        assert hypergeom_sf(k, n, good, draws) == pytest.approx(expected, rel=1e-8, abs=1e-300)
    for wrong, size, total, n in [(5, 20, 12, 228), (0, 30, 8, 228), (20, 20, 61, 228), (3, 40, 3, 100)]:
        table = [[wrong, size - wrong], [total - wrong, n - size - total + wrong]]
        assert fisher_greater(np.array([wrong]), np.array([size]), total, n)[0] == pytest.approx(
            fisher_exact(table, alternative="greater")[1], rel=1e-9)


def test_benjamini_hochberg_is_statsmodels():
    rng = np.random.default_rng(1)
    for m in (1, 2, 17, 500):
        p = np.concatenate([rng.random(m) ** 3, [1.0, 0.0, 0.5, 0.5]])  # ties and the ends
        assert np.allclose(benjamini_hochberg(p), multipletests(p, method="fdr_bh")[1], rtol=0, atol=1e-12)
    with pytest.raises(InputError, match="pvalues"):
        benjamini_hochberg(np.array([0.2, 1.5]))


def test_the_sliceline_score_is_the_sliceline_package_s():
    """On a table of categories, sliceline (Sagadeeva and Boehm's search) finds the single slice we score best."""
    sliceline = pytest.importorskip("sliceline")
    rng = np.random.default_rng(2)
    n = 1500
    frame = pd.DataFrame({"a": rng.choice(["p", "q", "r"], n), "b": rng.choice(["s", "t"], n),
                          "c": rng.choice(["u", "v", "w", "x"], n)})
    errors = (rng.random(n) < 0.1) | ((frame["c"] == "w").to_numpy() & (rng.random(n) < 0.3))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sliceline's note that numba would make it faster
        finder = sliceline.Slicefinder(alpha=0.95, k=1, max_l=1, min_sup=20, verbose=False)
        finder.fit(frame.to_numpy(), errors.astype(float))
    theirs = finder.top_slices_statistics_[0]
    top = [(j, v) for j, v in enumerate(finder.top_slices_[0]) if v is not None]
    assert top == [(2, "w")]
    size, wrong = (frame["c"] == "w").sum(), errors[(frame["c"] == "w").to_numpy()].sum()
    ours = sliceline_score(np.array([size]), np.array([wrong]), n, errors.sum(), 0.95)[0]
    assert ours == pytest.approx(theirs["slice_score"], rel=1e-9)
    result = find_weak_slices(frame, np.zeros(n, int), errors.astype(int))
    assert result.groups[0]["text"] == "c = w"


def test_the_power_is_the_simulated_one():
    n, size, accuracy, threshold, gap = 1000, 40, 0.9, 0.05 / 500, 0.3
    rest = np.arange(0, 300)
    critical = critical_errors(n, size, rest, threshold, 0.05)
    table = flagged(n, size, np.arange(size + 1)[:, None], rest[None, :], threshold, 0.05)
    first = np.where(table.any(axis=0), table.argmax(axis=0), size + 1)
    assert np.array_equal(critical, first)
    assert all(table[int(c):, j].all() for j, c in enumerate(critical))  # flagged from the critical count on
    rng = np.random.default_rng(0)
    k = rng.binomial(size, 1 - accuracy + gap, 40_000)
    j = rng.binomial(n - size, 1 - accuracy, 40_000)
    simulated = flagged(n, size, k, j, threshold, 0.05).mean()
    assert power_curve(n, size, accuracy, threshold, 0.05)(gap) == pytest.approx(simulated, abs=0.01)
    gaps = [detectable_gap(m, 50, 0.9, 0.05 / 1000, 0.05) for m in (200, 1000, 10_000)]
    assert gaps[0] > gaps[1] > gaps[2] >= 0.05
    assert detectable_gap(60, 20, 0.5, 1e-9, 0.05) is None  # not even an always-wrong slice is seen


@pytest.fixture(scope="module")
def breast_cancer():
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split

    data = load_breast_cancer(as_frame=True)
    return train_test_split(data.data, data.target.to_numpy(), test_size=0.4, stratify=data.target,
                            random_state=0)


def test_a_planted_weak_slice_fails_named_by_worst_area(breast_cancer):
    from sklearn.ensemble import GradientBoostingClassifier

    x_train, x_test, y_train, y_test = breast_cancer
    top_fifth = (x_train["worst area"] > x_train["worst area"].quantile(0.8)).to_numpy()
    model = GradientBoostingClassifier(random_state=0).fit(x_train, np.where(top_fifth, 1 - y_train, y_train))
    predicted = model.predict(x_test)
    result = find_weak_slices(x_test, y_test, predicted)
    verdict = result.verdict()
    worst = result.groups[0]
    assert verdict.status == "fail" and verdict.numbers["slice"] == worst["text"]
    named = [worst["text"], *worst["same_rows"]]
    assert any(text.startswith("worst area > ") for text in named), named
    planted = (x_test["worst area"] > x_train["worst area"].quantile(0.8)).to_numpy()
    wrong = predicted != y_test
    assert worst["accuracy"] <= 0.05 and worst["rest_accuracy"] >= 0.9
    assert worst["rows"] == pytest.approx(planted.sum(), abs=6)
    assert worst["correct"] + (worst["rows"] - worst["correct"]) == worst["rows"]
    assert worst["pvalue"] < 1e-20 and worst["low"] == 0.0 and worst["high"] < 0.1
    assert wrong[planted].mean() > 0.9


def test_an_honest_model_s_slices_do_not_fail(breast_cancer):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x_train, x_test, y_train, y_test = breast_cancer
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(x_train, y_train)
    result = find_weak_slices(x_test, y_test, model.predict(x_test))
    verdict = result.verdict()
    assert verdict.status == "pass" and verdict.reason == "no_weak_slice" and not result.groups
    assert 0.05 <= verdict.numbers["detectable_gap"] < 0.6 and verdict.numbers["detectable_rows"] == 20
    assert result.n_tried > 1000 and result.weakest is not None and result.weakest["qvalue"] > 0.05


def test_clean_errors_fail_at_most_at_the_level():
    """Errors that fall regardless of the columns: the search fails at most about 5% of the time."""
    frame, rng = _table(n=400, seed=5)
    fails = 0
    for _ in range(60):
        errors = rng.random(400) < 0.2
        fails += find_weak_slices(frame, np.zeros(400, int), errors.astype(int)).verdict().status == "fail"
    assert fails <= 8  # binomial(60, 0.05): P(more than 8) < 0.2%


def test_missing_values_and_odd_columns_are_skipped_with_their_reason():
    frame, rng = _table(n=200, seed=6)
    frame["empty"] = np.nan
    frame["constant"] = 3.0
    frame["when"] = pd.Timestamp("2024-01-01")
    errors = rng.random(200) < 0.2
    result = find_weak_slices(frame, np.zeros(200, int), errors.astype(int))
    assert result.skipped_columns == {"empty": "every value is missing", "constant": "one value only (3)",
                                      "when": "dates and durations are not sliced"}
    assert result.columns == ["age", "income", "city", "children"]
    only_empty = find_weak_slices(frame[["empty"]], np.zeros(200, int), errors.astype(int))
    assert only_empty.verdict().status == "inconclusive" and only_empty.verdict().reason == "no_column_to_slice"


def test_arrays_and_small_data():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(500, 3))
    errors = (rng.random(500) < 0.1) | ((x[:, 1] > 1.0) & (rng.random(500) < 0.8))
    result = find_weak_slices(x, np.zeros(500, int), errors.astype(int))
    assert result.groups[0]["text"].startswith("x[1] > ")
    named = find_weak_slices(x, np.zeros(500, int), errors.astype(int), feature_names=["a", "b", "c"])
    assert named.groups[0]["text"].startswith("b > ")
    small = find_weak_slices(x[:30], np.zeros(30, int), errors[:30].astype(int))
    assert small.verdict().reason == "too_few_rows" and small.n_tried == 0
    perfect = find_weak_slices(x, np.zeros(500, int), np.zeros(500, int))
    assert perfect.verdict().status == "pass" and perfect.accuracy == 1.0


@pytest.mark.parametrize("call, message", [
    (lambda x, y: find_weak_slices(x, y, y[:-1]), "`y_true` and `y_pred` must be 1-D of one length"),
    (lambda x, y: find_weak_slices(x[:10], y, y), "`X` has 10 rows but `y_true` has 100 labels"),
    (lambda x, y: find_weak_slices(x[:, :, None], y, y), "`X` must be a table"),
    (lambda x, y: find_weak_slices(x, y, y, level=0), "`level` must be in"),
    (lambda x, y: find_weak_slices(x, y, y, feature_names=["a"]), "`feature_names` has 1 names"),
    (lambda x, y: find_weak_slices(x, y[:0], y[:0]), "`y_true` is empty"),
])
def test_bad_input_is_an_input_error(call, message):
    x, y = np.random.default_rng(0).normal(size=(100, 2)), np.zeros(100, int)
    with pytest.raises(InputError, match=message):
        call(x, y)


def test_a_saved_result_reads_back_and_an_edited_one_is_refused(breast_cancer):
    x_train, x_test, y_train, y_test = breast_cancer
    predicted = np.where(x_test["mean radius"] > 17, 1 - y_test, y_test)
    result = find_weak_slices(x_test, y_test, predicted)
    saved = json.loads(result.to_json())
    back = load_result(saved, SliceResult)
    assert back.verdict() == result.verdict() and back.groups[0]["text"] == result.groups[0]["text"]
    saved["groups"][0]["accuracy"] = 0.9
    with pytest.raises(InputError, match="accuracy"):
        load_result(saved, SliceResult)


def test_a_large_table_is_fast():
    rng = np.random.default_rng(8)
    n = 100_000
    frame = pd.DataFrame(rng.normal(size=(n, 30)), columns=[f"f{i}" for i in range(30)])
    errors = (rng.random(n) < 0.1) | ((frame["f7"] > 1.5).to_numpy() & (rng.random(n) < 0.3))
    start = time.perf_counter()
    result = find_weak_slices(frame, np.zeros(n, int), errors.astype(int))
    seconds = time.perf_counter() - start
    assert result.groups[0]["text"].startswith("f7 > ") and seconds < 30  # about 1.5 s alone on one core


def test_a_weak_slice_of_most_rows_says_the_rest_are_easier():
    """A slice of most rows below the rest is read as what it is: the few rows outside are easier."""
    from fitaudit.report.verdicts import read

    frame, rng = _table(n=2000, seed=5)
    easy = (frame["age"] > 70).to_numpy()
    errors = rng.random(2000) < np.where(easy, 0.02, 0.3)
    result = find_weak_slices(frame, np.zeros(2000, dtype=int), errors.astype(int))
    worst = result.groups[0]
    share = worst["rows"] / result.n
    assert result.verdict().status == "fail" and share > 0.5
    sentence = read(result).sentence
    assert sentence.startswith(f"Weak slice of {share:.0%} of the rows (the other {1 - share:.0%} are easier): "
                               f"{worst['text']}: ")
