"""PMV's choice beside 5-fold cross-validation's (``cv_check``), against scikit-learn's cross_val_score."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.datasets import make_moons
from sklearn.model_selection import cross_val_score
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.tree import DecisionTreeClassifier

from fitaudit import InputError
from fitaudit.cli import main
from fitaudit.pmv import PMVComparison, PMVSearchCV, compare_estimators
from fitaudit.report import render
from fitaudit.report.pmv_words import cv_check_text
from fitaudit.report.verdicts import read
from fitaudit.results import load_result

RATES = [0.1, 0.3]
X, Y = make_moons(150, noise=0.25, random_state=0)
LEARNERS = {"nb": GaussianNB(), "knn5": KNeighborsClassifier(5),
            "d6": DecisionTreeClassifier(max_depth=6, random_state=0)}


def reference(estimator) -> float:
    """5-fold accuracy computed here, independently of fitaudit."""
    return float(np.mean(cross_val_score(estimator, X, Y, cv=5)))


@pytest.fixture(scope="module")
def comparison() -> PMVComparison:
    return compare_estimators(LEARNERS, X, Y, rates=RATES, random_state=0, cv_check=True)


def test_compare_records_both_choices_and_their_cv_accuracies(comparison) -> None:
    expected = {name: reference(estimator) for name, estimator in LEARNERS.items()}
    assert comparison.cv_accuracy == pytest.approx([expected[name] for name in comparison.names])
    assert comparison.cv_best == max(expected, key=expected.get) == "knn5"
    assert comparison.best == "nb"  # PMV's steepest slope: the two choices differ on this sample
    numbers = comparison.verdict().numbers
    assert numbers["cv_accuracy_of_best"] == pytest.approx(expected["nb"])
    assert numbers["cv_accuracy_of_cv_best"] == pytest.approx(expected["knn5"])
    sentence = read(comparison).sentence
    assert (f"5-fold cross-validation on the same data chooses knn5 (accuracy {expected['knn5']:.3f}); PMV's choice "
            f"nb scores {expected['nb']:.3f} there") in sentence
    again = PMVComparison.from_dict(json.loads(json.dumps(comparison.to_dict())))
    assert again.cv_best == "knn5" and read(again).sentence == sentence
    table = render(comparison, "markdown")
    assert sentence in table and f"| {expected['knn5']:.4f} (CV choice) |" in table
    assert f"5-fold CV accuracy {expected['nb']:.4f}" in render(comparison, "html")


def test_without_the_check_nothing_is_fitted_or_said(comparison) -> None:
    plain = compare_estimators(LEARNERS, X, Y, rates=RATES, random_state=0)
    assert plain.cv_accuracy is None and plain.cv_best is None
    assert "cross-validation" not in read(plain).sentence
    with pytest.raises(InputError, match="`cv_check` must be True or False; got 'yes'"):
        compare_estimators(LEARNERS, X, Y, rates=RATES, cv_check="yes")


def test_an_edited_cv_choice_is_caught_on_load(comparison) -> None:
    data = comparison.to_dict()
    data["cv_best"] = "nb"
    with pytest.raises(InputError, match="`cv_best` is 'nb', but the largest `cv_accuracy` is 'knn5'"):
        load_result(data, PMVComparison)
    assert load_result(comparison.to_dict(), PMVComparison).cv_best == "knn5"


def test_search_records_cross_validation_beside_its_choice() -> None:
    grid = [1, 5, 25, 75]
    search = PMVSearchCV(KNeighborsClassifier(), {"n_neighbors": grid}, rates=RATES, cv_check=True).fit(X, Y)
    expected = [reference(KNeighborsClassifier(k)) for k in grid]
    assert search.cv_results_["cv_accuracy"] == pytest.approx(expected)
    assert search.cv_best_index_ == int(np.argmax(expected)) == 1
    assert search.best_params_ == {"n_neighbors": 25}  # PMV prefers the smoother learner here
    check = search.cv_check_
    assert check["cv_accuracy_of_best"] == pytest.approx(expected[2])
    assert check["cv_accuracy_of_cv_best"] == pytest.approx(expected[1])
    assert "chooses {'n_neighbors': 5}" in cv_check_text(check)
    plain = PMVSearchCV(KNeighborsClassifier(), {"n_neighbors": grid}, rates=RATES).fit(X, Y)
    assert "cv_accuracy" not in plain.cv_results_ and not hasattr(plain, "cv_check_")


@pytest.mark.slow
def test_cli_compares_learners_with_cross_validation(tmp_path, capsys) -> None:
    path = tmp_path / "moons.npz"
    np.savez(path, x=X, y=Y)
    argv = ["pmv", "--data", str(path), "--estimator", "naive_bayes", "--estimator", "knn", "--rates", "0.1,0.3",
            "--quiet", "--compare-cv"]
    assert main([*argv, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    expected = {"naive_bayes": reference(GaussianNB()), "knn": reference(KNeighborsClassifier())}
    assert payload["type"] == "PMVComparison" and payload["cv_best"] == "knn"
    assert payload["cv_accuracy"] == pytest.approx([expected["naive_bayes"], expected["knn"]])
    assert payload["verdict"]["numbers"]["cv_best"] == "knn"
    assert main(argv) == 0
    assert "5-fold cross-validation on the same data chooses knn" in capsys.readouterr().out


@pytest.mark.parametrize("extra, message", [
    ([], "`--compare-cv` compares PMV's choice among learners with 5-fold cross-validation's: give at least two "
         "`--estimator`; got 1 learner."),
    (["--estimator", "knn", "--param", "n_neighbors=3"], "`--param` sets the parameters of one learner; got 2"),
    (["--estimator", "naive_bayes"], "`--estimator` names must differ; got naive_bayes, naive_bayes."),
])
def test_cli_refuses_what_it_cannot_compare(tmp_path, capsys, extra, message) -> None:
    path = tmp_path / "moons.npz"
    np.savez(path, x=X, y=Y)
    argv = ["pmv", "--data", str(path), "--estimator", "naive_bayes", "--compare-cv", "--quiet", *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
