"""PMVSearchCV: same numbers as a plain loop, native search behaviour, estimator checks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_iris, make_moons
from sklearn.exceptions import FitFailedWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils.estimator_checks import check_estimator

from fitaudit import InputError
from fitaudit.pmv import PMVSearchCV, pmv_score

X, Y = make_moons(120, noise=0.3, random_state=0)
RATES = [0.1, 0.2, 0.3, 0.4, 0.5]
DEPTHS = [1, 2, 3, 5, None]


def test_scores_equal_a_loop_over_candidates() -> None:
    search = PMVSearchCV(
        DecisionTreeClassifier(random_state=0),
        {"max_depth": DEPTHS},
        rates=RATES,
        n_repeats=2,
        random_state=4,
    ).fit(X, Y)
    loop = [
        pmv_score(
            DecisionTreeClassifier(max_depth=d, random_state=0),
            X,
            Y,
            rates=RATES,
            n_repeats=2,
            random_state=4,
            heldout=False,  # the search scores PMV alone
        )
        for d in DEPTHS
    ]
    results = search.cv_results_
    np.testing.assert_allclose(results["mean_test_score"], [r.score for r in loop])
    np.testing.assert_allclose(results["std_test_score"], [r.score_std for r in loop])
    np.testing.assert_allclose(results["slope"], [r.slope for r in loop])
    np.testing.assert_allclose(results["mean_accuracy_r0.3"], [r.mean_accuracy[3] for r in loop])
    best = int(np.argmax([r.score for r in loop]))
    assert search.best_index_ == best
    assert search.best_params_ == {"max_depth": DEPTHS[best]}
    assert search.best_score_ == pytest.approx(loop[best].score)
    assert results["rank_test_score"][best] == 1
    assert results["rank_test_score"][DEPTHS.index(None)] == len(DEPTHS)  # the memoriser is last
    assert list(results["param_max_depth"]) == DEPTHS
    assert search.rates_.tolist() == [0.0, *RATES]
    for row, (mine, alone) in enumerate(zip(search.pmv_results_, loop)):
        assert mine.to_dict() | {"fit_seconds": 0} == alone.to_dict() | {"fit_seconds": 0}
        assert results["bound"][row] == pytest.approx(alone.bound)


def test_bound_at_the_users_delta() -> None:
    search = PMVSearchCV(
        DecisionTreeClassifier(random_state=0), {"max_depth": [1, 3]}, rates=[0.2, 0.4], delta=0.2, random_state=0
    ).fit(X, Y)
    for row, result in enumerate(search.pmv_results_):
        assert result.delta == 0.2
        expected = 1 - 0.5 * abs(result.slope) + 3 * np.sqrt(np.log(2 / 0.2) / (2 * len(Y)))
        assert search.cv_results_["bound"][row] == pytest.approx(expected)
    with pytest.raises(InputError, match=r"`delta` must be in \(0, 1\); got 1"):
        PMVSearchCV(DecisionTreeClassifier(), {"max_depth": [1]}, delta=1.0).fit(X, Y)


def test_refit_on_original_data_and_delegation() -> None:
    search = PMVSearchCV(
        DecisionTreeClassifier(random_state=0), {"max_depth": [1, 3]}, rates=RATES, random_state=0
    )
    search.fit(X, Y)
    fresh = DecisionTreeClassifier(random_state=0, **search.best_params_).fit(X, Y)
    np.testing.assert_array_equal(search.predict(X), fresh.predict(X))
    np.testing.assert_allclose(search.predict_proba(X), fresh.predict_proba(X))
    assert search.score(X, Y) == pytest.approx(fresh.score(X, Y))
    assert list(search.classes_) == [0, 1]
    assert search.n_features_in_ == 2

    no_refit = PMVSearchCV(
        DecisionTreeClassifier(), {"max_depth": [1, 3]}, rates=RATES, refit=False
    ).fit(X, Y)
    assert not hasattr(no_refit, "best_estimator_")
    with pytest.raises(AttributeError, match="has no attribute 'predict'"):
        no_refit.predict(X)

    chooser = PMVSearchCV(
        DecisionTreeClassifier(), {"max_depth": [1, 3]}, rates=RATES, refit=lambda results: 0
    ).fit(X, Y)
    assert chooser.best_params_ == {"max_depth": 1} and not hasattr(chooser, "best_score_")


def test_pipeline_grid_and_search_inside_a_pipeline() -> None:
    pipe = make_pipeline(StandardScaler(), SVC())
    search = PMVSearchCV(pipe, {"svc__C": [0.1, 10.0]}, rates=RATES, random_state=1).fit(X, Y)
    direct = pmv_score(
        make_pipeline(StandardScaler(), SVC(C=10.0)), X, Y, rates=RATES, random_state=1
    )
    assert search.cv_results_["mean_test_score"][1] == pytest.approx(direct.score)

    outer = make_pipeline(
        StandardScaler(), PMVSearchCV(SVC(), {"C": [0.1, 10.0]}, rates=RATES, random_state=1)
    ).fit(X, Y)
    assert outer.predict(X).shape == Y.shape
    # works as a model inside scikit-learn's own cross-validation
    assert cross_val_score(outer, X, Y, cv=2).shape == (2,)


def test_comparing_different_estimators_with_a_pipeline_step_grid() -> None:
    candidates = [GaussianNB(), DecisionTreeClassifier(random_state=0), LogisticRegression()]
    search = PMVSearchCV(
        Pipeline([("clf", GaussianNB())]), {"clf": candidates}, rates=RATES, random_state=2
    )
    search.fit(X, Y)
    alone = [pmv_score(c, X, Y, rates=RATES, random_state=2).score for c in candidates]
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], alone)
    assert type(search.best_estimator_.named_steps["clf"]) is type(
        candidates[int(np.argmax(alone))]
    )


def test_multiclass_and_mutation_criterion() -> None:
    Xi, yi = load_iris(return_X_y=True)
    search = PMVSearchCV(
        DecisionTreeClassifier(random_state=0),
        {"max_depth": [1, 3, None]},
        criterion="mutation",
        random_state=0,
    ).fit(Xi, yi)
    loop = [
        pmv_score(
            DecisionTreeClassifier(max_depth=d, random_state=0),
            Xi,
            yi,
            criterion="mutation",
            random_state=0,
        )
        for d in [1, 3, None]
    ]
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], [r.score for r in loop])
    assert search.rates_.tolist() == [0.0, 0.2]


@pytest.mark.slow
def test_n_jobs_gives_identical_results() -> None:
    kwargs = dict(rates=[0.1, 0.3], n_repeats=2, random_state=9)
    one = PMVSearchCV(
        DecisionTreeClassifier(random_state=0), {"max_depth": [2, 4]}, n_jobs=1, **kwargs
    ).fit(X, Y)
    two = PMVSearchCV(
        DecisionTreeClassifier(random_state=0), {"max_depth": [2, 4]}, n_jobs=2, **kwargs
    ).fit(X, Y)
    for key in ("mean_test_score", "std_test_score", "mean_accuracy_r0.1", "mean_accuracy_r0.3"):
        np.testing.assert_array_equal(one.cv_results_[key], two.cv_results_[key])


def test_failing_candidates_follow_error_score() -> None:
    grid = {"C": [1.0, -1.0]}  # C must be positive: the second candidate fails
    with pytest.warns(FitFailedWarning, match="PMV fits failed"):
        search = PMVSearchCV(LogisticRegression(), grid, rates=RATES, random_state=0).fit(X, Y)
    assert np.isnan(search.cv_results_["mean_test_score"][1])
    assert search.cv_results_["rank_test_score"].tolist() == [1, 2]
    with pytest.raises(ValueError, match="C"):
        PMVSearchCV(LogisticRegression(), grid, rates=RATES, error_score="raise").fit(X, Y)


def test_bad_input() -> None:
    with pytest.raises(InputError, match="must be a classifier"):
        from sklearn.linear_model import Ridge

        PMVSearchCV(Ridge(), {"alpha": [1.0]}).fit(X, X[:, 0])
    with pytest.raises(InputError, match=r"`rates` must be in \(0, 0.5\]"):
        PMVSearchCV(GaussianNB(), {"var_smoothing": [1e-9]}, rates=[0.0, 0.1]).fit(X, Y)
    with pytest.raises(InputError, match="`error_score`"):
        PMVSearchCV(GaussianNB(), {"var_smoothing": [1e-9]}, error_score="ignore").fit(X, Y)


@pytest.mark.slow
def test_scikit_learn_estimator_checks() -> None:
    # The checks use tiny data sets (a few examples per class), so rates=[0.5]:
    # smaller rates would (rightly) raise because a class cannot lose a label.
    search = PMVSearchCV(LogisticRegression(), {"C": [0.1, 1.0]}, rates=[0.5], random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(search, on_fail=None)
    failed = [(r["check_name"], str(r["exception"])) for r in results if r["status"] == "failed"]
    assert failed == []
    assert sum(r["status"] == "passed" for r in results) > 40


class _SequentialSearch(PMVSearchCV):
    """A custom schedule: try depth 8 only if depth 2 beats depth 1 (the _run_search hook)."""

    def _run_search(self, evaluate_candidates):
        results = evaluate_candidates(
            [{"max_depth": 1}, {"max_depth": 2}], more_results={"stage": [0, 0]}
        )
        if results["mean_test_score"][1] > results["mean_test_score"][0]:
            evaluate_candidates([{"max_depth": 8}], more_results={"stage": [1]})


def test_run_search_hook_supports_sequential_schedules() -> None:
    search = _SequentialSearch(
        DecisionTreeClassifier(random_state=0), {}, rates=RATES, random_state=0
    ).fit(X, Y)
    scores = search.cv_results_["mean_test_score"]
    assert len(scores) == (3 if scores[1] > scores[0] else 2)
    assert search.cv_results_["stage"].tolist() == [0, 0, 1][: len(scores)]
    single = pmv_score(
        DecisionTreeClassifier(max_depth=2, random_state=0), X, Y, rates=RATES, random_state=0
    )
    assert scores[1] == pytest.approx(single.score)
