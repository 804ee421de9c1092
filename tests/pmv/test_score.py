"""pmv_score against a straightforward reference loop and hand formulas."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_moons
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

from fitaudit import InputError
from fitaudit.pmv import DEFAULT_RATES, PMVResult, compare_estimators, flip_labels, pmv_score
from fitaudit.pmv._engine import fit_line, mutation_value, pmv_bound
from fitaudit.random import spawn_seeds
from fitaudit.report import render, save_figure
from fitaudit.results import Result

X, Y = make_moons(120, noise=0.3, random_state=0)
TREE = DecisionTreeClassifier(max_depth=3, random_state=0)


def reference_accuracies(estimator, X, y, rates, n_repeats, seed, scheme="next"):
    """Slow, obvious version: one loop per repeat and rate."""
    seeds = spawn_seeds(seed, n_repeats * len(rates))
    base = clone(estimator).fit(X, y)
    acc0 = np.mean(base.predict(X) == y)
    rows, rows_original = [], []
    for i in range(n_repeats):
        row, row_original = [acc0], [acc0]
        for j, rate in enumerate(rates):
            noisy = flip_labels(y, rate, scheme=scheme, random_state=seeds[i * len(rates) + j])
            model = clone(estimator).fit(X, noisy)
            row.append(np.mean(model.predict(X) == noisy))
            row_original.append(np.mean(model.predict(X) == y))
        rows.append(row)
        rows_original.append(row_original)
    return np.array(rows), np.array(rows_original)


def test_slope_matches_closed_form_least_squares() -> None:
    rates = np.array([0.0, 0.1, 0.2, 0.3])
    acc = np.array([1.0, 0.9, 0.85, 0.7])
    r_bar, a_bar = rates.mean(), acc.mean()
    expected = np.sum((rates - r_bar) * (acc - a_bar)) / np.sum((rates - r_bar) ** 2)
    slope, intercept = fit_line(rates, acc)
    assert slope == pytest.approx(expected) and expected == pytest.approx(-0.95)
    assert intercept == pytest.approx(a_bar - expected * r_bar)
    assert all(np.isnan(fit_line(rates, np.array([1.0, np.nan, 0.8, 0.7]))))


def test_bound_and_mutation_formulas_by_hand() -> None:
    # 1 - 0.5 * 0.8 + 3 * sqrt(ln(40) / 200)
    assert pmv_bound(-0.8, 100, 0.05) == pytest.approx(0.6 + 3 * np.sqrt(np.log(40) / 200))
    # (1 - 0.4) * 0.9 + 0.95 - 0.8 + 0.2
    assert mutation_value(0.2, 0.95, 0.9, 0.8) == pytest.approx(0.89)


def test_pmv_score_equals_reference_loop() -> None:
    result = pmv_score(TREE, X, Y, n_repeats=2, random_state=7)
    acc, original = reference_accuracies(TREE, X, Y, DEFAULT_RATES, 2, 7)
    rates = np.concatenate([[0.0], DEFAULT_RATES])
    np.testing.assert_allclose(result.accuracies, acc)
    np.testing.assert_allclose(result.accuracies_original, original)
    np.testing.assert_allclose(result.mean_accuracy, acc.mean(axis=0))
    all_pairs_slope = np.polyfit(np.tile(rates, 2), acc.ravel(), 1)[0]
    assert result.slope == pytest.approx(all_pairs_slope)
    per_repeat = [abs(np.polyfit(rates, row, 1)[0]) for row in acc]
    assert result.score == pytest.approx(np.mean(per_repeat))
    assert result.score_std == pytest.approx(np.std(per_repeat))
    assert result.bound == pytest.approx(
        1 - 0.5 * abs(result.slope) + 3 * np.sqrt(np.log(2 / 0.05) / (2 * len(Y)))
    )
    assert result.to_dict()["type"] == "PMVResult"


def test_mutation_score_equals_reference() -> None:
    result = pmv_score(TREE, X, Y, criterion="mutation", n_repeats=3, random_state=1)
    acc, original = reference_accuracies(TREE, X, Y, [0.2], 3, 1)
    expected = [mutation_value(0.2, acc[i, 0], original[i, 1], acc[i, 1]) for i in range(3)]
    assert result.score == pytest.approx(np.mean(expected))
    assert result.rates.tolist() == [0.0, 0.2]


def test_memorising_learner_scores_near_zero() -> None:
    unbounded = pmv_score(DecisionTreeClassifier(random_state=0), X, Y, random_state=0)
    limited = pmv_score(TREE, X, Y, random_state=0)
    one_nn = pmv_score(KNeighborsClassifier(n_neighbors=1), X, Y, random_state=0)
    assert unbounded.score < 1e-9 and one_nn.score < 1e-9
    np.testing.assert_allclose(unbounded.mean_accuracy, 1.0)
    assert limited.score > 0.3


@pytest.mark.slow
def test_n_jobs_and_checkpoints_do_not_change_numbers(tmp_path) -> None:
    one = pmv_score(TREE, X, Y, rates=[0.1, 0.3], n_repeats=2, random_state=3, n_jobs=1)
    two = pmv_score(TREE, X, Y, rates=[0.1, 0.3], n_repeats=2, random_state=3, n_jobs=2)
    np.testing.assert_array_equal(one.accuracies, two.accuracies)
    first = pmv_score(TREE, X, Y, rates=[0.1, 0.3], random_state=3, checkpoint_dir=tmp_path)
    assert len(list(tmp_path.glob("*.json"))) == 3
    resumed = pmv_score(TREE, X, Y, rates=[0.1, 0.3], random_state=3, checkpoint_dir=tmp_path)
    np.testing.assert_array_equal(first.accuracies, resumed.accuracies)
    other = pmv_score(TREE, X, Y, rates=[0.1, 0.3], random_state=5, checkpoint_dir=tmp_path)
    assert (
        len(list(tmp_path.glob("*.json"))) == 6
    )  # a different seed is not confused with the first
    assert not np.array_equal(other.accuracies, first.accuracies)


def test_checkpoints_are_keyed_by_the_data_whatever_its_form(tmp_path) -> None:
    """A list (or DataFrame) X must not reuse fits made on other data in the same folder."""
    shifted = X + np.array([0.0, 5.0]) * (np.arange(len(X)) % 2 == 0)[:, None]
    on_x = pmv_score(TREE, X.tolist(), Y, rates=[0.1, 0.3], random_state=3, checkpoint_dir=tmp_path)
    on_shifted = pmv_score(
        TREE, shifted.tolist(), Y, rates=[0.1, 0.3], random_state=3, checkpoint_dir=tmp_path
    )
    fresh = pmv_score(TREE, shifted, Y, rates=[0.1, 0.3], random_state=3)
    np.testing.assert_array_equal(on_shifted.accuracies, fresh.accuracies)
    assert not np.array_equal(on_x.accuracies, on_shifted.accuracies)


def test_compare_estimators_matches_individual_scores() -> None:
    candidates = {"shallow": DecisionTreeClassifier(max_depth=1, random_state=0), "tree3": TREE}
    comparison = compare_estimators(candidates, X, Y, rates=[0.1, 0.2, 0.4], random_state=5)
    for name, est in candidates.items():
        alone = pmv_score(est, X, Y, rates=[0.1, 0.2, 0.4], random_state=5)
        assert comparison.results[name].score == pytest.approx(alone.score)
    assert comparison.best == comparison.names[int(np.argmax(comparison.scores))]
    assert "(selected)" in render(comparison, "markdown")
    unnamed = compare_estimators([TREE, clone(TREE)], X, Y, rates=[0.2], random_state=5)
    assert unnamed.names == ["DecisionTreeClassifier", "DecisionTreeClassifier_2"]


def test_results_round_trip_and_render_from_saved_json(tmp_path) -> None:
    result = pmv_score(TREE, X, Y, rates=[0.1, 0.2], n_repeats=2, random_state=0)
    saved = json.loads(result.to_json())
    again = Result.from_dict(saved)
    assert isinstance(again, PMVResult) and again.to_dict() == result.to_dict()
    np.testing.assert_array_equal(again.accuracies, result.accuracies)
    assert render(saved, "markdown") == render(result, "markdown")
    assert f"|k_S| = {result.statistic:.3f}" in render(saved, "markdown")
    assert render(saved, "html").startswith("<p>DecisionTreeClassifier: Passes: ") and "|k_S| = " in render(saved, "html")
    figure = render(saved, "figure")
    assert len(figure.axes[0].lines) >= 2
    save_figure(figure, tmp_path / "pmv.png")
    assert (tmp_path / "pmv.png").stat().st_size > 1000
    comparison = compare_estimators({"a": TREE, "b": LogisticRegression()}, X, Y, rates=[0.2], random_state=0)
    back = Result.from_dict(json.loads(comparison.to_json()))
    assert isinstance(back.results["a"], PMVResult) and back.to_dict() == comparison.to_dict()
    text = render(comparison.to_dict(), "markdown")
    assert f"| {comparison.best} **(selected)** |" in text
    assert len(render(back, "figure").axes[0].lines) >= 4


def test_statistic_is_the_absolute_slope() -> None:
    result = pmv_score(TREE, X, Y, rates=[0.1, 0.2, 0.3], random_state=1)
    slope = np.polyfit(result.rates, result.mean_accuracy, 1)[0]
    assert result.statistic == pytest.approx(abs(slope)) == pytest.approx(result.score)
    assert result.slope == pytest.approx(slope)


@pytest.mark.slow
def test_unseeded_learners_are_seeded_from_random_state() -> None:
    """Same seed, same numbers, even for a learner without its own seed (issue #8: 0.68667 vs 0.68727)."""
    forest = RandomForestClassifier(n_estimators=5, max_depth=4)
    first = pmv_score(forest, X, Y, rates=[0.1, 0.3], random_state=4)
    second = pmv_score(forest, X, Y, rates=[0.1, 0.3], random_state=4, n_jobs=2)
    np.testing.assert_array_equal(first.accuracies, second.accuracies)
    assert forest.random_state is None  # the user's estimator is not modified
    other = pmv_score(forest, X, Y, rates=[0.1, 0.3], random_state=5)
    assert not np.array_equal(first.accuracies, other.accuracies)
    seeded = RandomForestClassifier(n_estimators=5, max_depth=4, random_state=0)
    kept = pmv_score(seeded, X, Y, rates=[0.1, 0.3], random_state=4)
    alone = pmv_score(clone(seeded), X, Y, rates=[0.1, 0.3], random_state=4)
    np.testing.assert_array_equal(kept.accuracies, alone.accuracies)
    piped = make_pipeline(StandardScaler(), RandomForestClassifier(n_estimators=5, max_depth=4))
    a = pmv_score(piped, X, Y, rates=[0.2], random_state=2)
    b = pmv_score(piped, X, Y, rates=[0.2], random_state=2)
    np.testing.assert_array_equal(a.accuracies, b.accuracies)


def test_missing_labels_are_refused() -> None:
    labels = Y.astype(float)
    labels[[3, 8]] = np.nan
    with pytest.raises(InputError, match=r"`y` holds 2 missing label\(s\) \(NaN or None\)"):
        pmv_score(TREE, X, labels)
    with pytest.raises(InputError, match=r"`y` holds 1 missing label\(s\)"):
        pmv_score(TREE, X[:4], np.array(["a", None, "b", "a"], dtype=object))


def test_bad_input_messages() -> None:
    with pytest.raises(InputError, match="must be a classifier"):
        pmv_score(LinearRegression(), X, Y)
    with pytest.raises(InputError, match="at least two classes"):
        pmv_score(TREE, X, np.zeros(len(Y), dtype=int))
    with pytest.raises(InputError, match=r"`rates` must be in \(0, 0.5\]"):
        pmv_score(TREE, X, Y, rates=[0.1, 0.7])
    with pytest.raises(InputError, match="needs at least 10 examples per class"):
        pmv_score(TREE, X[:70], np.r_[np.zeros(61, dtype=int), np.ones(9, dtype=int)])
    with pytest.raises(InputError, match="not regression targets"):
        pmv_score(TREE, X, X[:, 0])
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(InputError, match=r"`X` holds 1 NaN .* LogisticRegression does not accept"):
        pmv_score(LogisticRegression(), bad, Y)
    with pytest.raises(InputError, match="same number of examples"):
        pmv_score(TREE, X[:-1], Y)
    with pytest.raises(InputError, match="exactly one rate"):
        pmv_score(TREE, X, Y, criterion="mutation", rates=[0.1, 0.2])
    with pytest.raises(InputError, match="`n_repeats` must be a positive integer"):
        pmv_score(TREE, X, Y, n_repeats=0)
    with pytest.raises(InputError, match="`y` must be array-like"):
        pmv_score(TREE, X[:2], [[0, 1], [1]])
    with pytest.raises(InputError, match="`fit_params` must be a dict"):
        pmv_score(TREE, X, Y, fit_params=[("sample_weight", None)])


def test_nan_allowed_when_the_learner_accepts_it() -> None:
    bad = X.copy()
    bad[3, 1] = np.nan
    assert (
        pmv_score(DecisionTreeClassifier(max_depth=2), bad, Y, rates=[0.2], random_state=0).score
        > 0
    )


def test_dask_backend_gives_the_same_numbers() -> None:
    distributed = pytest.importorskip("dask.distributed")
    import joblib

    local = pmv_score(TREE, X, Y, rates=[0.1, 0.4], random_state=8)
    with distributed.Client(
        processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None
    ):
        with joblib.parallel_config(backend="dask"):
            remote = pmv_score(TREE, X, Y, rates=[0.1, 0.4], random_state=8, n_jobs=2)
    np.testing.assert_array_equal(local.accuracies, remote.accuracies)


def test_majority_baseline_equals_a_fitted_dummy_classifier() -> None:
    """The baseline is the training accuracy of DummyClassifier('most_frequent') on each S_r, computed exactly."""
    from sklearn.dummy import DummyClassifier

    rng = np.random.default_rng(3)
    y = (rng.random(200) < 0.8).astype(int)  # a majority share of about 0.8
    x = rng.normal(size=(200, 2))
    dummy = DummyClassifier(strategy="most_frequent")
    result = pmv_score(dummy, x, y, n_repeats=2, random_state=5)
    np.testing.assert_allclose(result.baseline_accuracy, result.mean_accuracy)  # fitted vs exact
    assert result.baseline_statistic == pytest.approx(result.statistic)
    p = np.mean(y == 1)
    assert result.baseline_accuracy[0] == pytest.approx(p)
    assert result.baseline_statistic == pytest.approx(2 * p - 1, abs=0.02)  # two classes: 2p - 1
    other = pmv_score(TREE, X, Y, random_state=0)  # moons: balanced, the baseline stays at 0.5
    np.testing.assert_allclose(other.baseline_accuracy, 0.5, atol=0.01)


def test_a_learner_at_the_majority_baseline_is_never_selected() -> None:
    """On a 90/10 table PMV's slope gives the constant predictor |k_S| ~ 0.8: it must not be chosen."""
    from sklearn.dummy import DummyClassifier

    from fitaudit.pmv.baseline import BASELINE_GAIN, at_majority_baseline, baseline_gain

    rng = np.random.default_rng(1)
    x = rng.normal(size=(300, 3))
    y = (x[:, 0] + rng.normal(scale=0.3, size=300) > 1.28).astype(int)  # about 10% positives
    learners = {"dummy": DummyClassifier(), "tree": DecisionTreeClassifier(max_depth=8, random_state=0)}
    comparison = compare_estimators(learners, x, y, random_state=0)
    dummy, tree = comparison.results["dummy"], comparison.results["tree"]
    assert dummy.score > tree.score  # what the slope alone would choose
    assert comparison.at_baseline == ["dummy"] and comparison.best == "tree"
    p = np.mean(y == 0)
    a = tree.mean_accuracy[0]
    assert baseline_gain(tree) == pytest.approx((a - p) / (1 - p))  # by hand
    assert baseline_gain(dummy) == pytest.approx(0.0) and at_majority_baseline(dummy)
    assert baseline_gain(tree) >= BASELINE_GAIN and not at_majority_baseline(tree)


def test_learner_names_are_escaped_in_the_markdown_table() -> None:
    """A name holding a cell separator or raw HTML stays inside its cell (issue 30 item 9)."""
    from fitaudit.report.pmv import comparison_table

    comparison = compare_estimators({"a|b": TREE, "<script>x</script>": LogisticRegression()}, X, Y,
                                    rates=[0.1, 0.3], random_state=0)
    rows = comparison_table(comparison).splitlines()[2:4]
    assert rows[0].startswith("| a\\|b") and rows[1].startswith("| &lt;script&gt;x&lt;/script&gt;")
    assert all(row.count(" | ") == 5 for row in rows)  # six cells each: the name did not add one
