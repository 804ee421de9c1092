"""PMV where it cannot tell (issue 50, item 5): a memorising learner judged by its cross-validated accuracy."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.neighbors import KNeighborsClassifier
from sklearn.tree import DecisionTreeClassifier

from fitaudit._errors import InputError
from fitaudit.pmv import pmv_score
from fitaudit.pmv.decision import HELDOUT_LEVEL, MATERIAL_GAP, heldout_verdict
from fitaudit.pmv.heldout import REFERENCE, HeldOutCheck, heldout_check
from fitaudit.report.verdicts import say_pmv
from fitaudit.results import Result


def _naive_counts(own, other):
    return sum(a and not b for a, b in zip(own, other)), sum(b and not a for a, b in zip(own, other))


def test_counts_and_tests_match_a_plain_loop_and_scipy():
    X, y = load_breast_cancer(return_X_y=True)
    from sklearn.dummy import DummyClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    check = heldout_check(DecisionTreeClassifier(random_state=0), X, y, random_state=0)
    folds = StratifiedKFold(5)
    own = cross_val_predict(DecisionTreeClassifier(random_state=0), X, y, cv=folds) == y
    majority = cross_val_predict(DummyClassifier(), X, y, cv=folds) == y
    reference = cross_val_predict(make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)), X, y,
                                  cv=folds) == y
    assert (check.wins_vs_majority, check.losses_vs_majority) == _naive_counts(own, majority)
    assert (check.wins_vs_reference, check.losses_vs_reference) == _naive_counts(own, reference)
    assert check.accuracy == pytest.approx(own.mean()) and check.reference_accuracy == pytest.approx(reference.mean())
    wins, losses = check.wins_vs_reference, check.losses_vs_reference
    assert check.pvalue_below_reference() == pytest.approx(
        binomtest(losses, wins + losses, 0.5, alternative="greater").pvalue)


def test_gap_interval_by_hand():
    check = HeldOutCheck(5, 200, 0.8, 0.5, 70, 10, REFERENCE, 0.85, 10, 20)
    share = binomtest(20, 30).proportion_ci(0.95, method="exact")
    low, high = check.gap_interval(0.95)
    assert low == pytest.approx(30 / 200 * (2 * share.low - 1)) and high == pytest.approx(30 / 200 * (2 * share.high - 1))
    assert low < (0.85 - 0.8) < high


@pytest.mark.parametrize(("check", "status", "reason"), [
    (HeldOutCheck(5, 500, 0.60, 0.58, 40, 30, REFERENCE, 0.6, 20, 20), "fail", "memorises_no_better_than_majority"),
    (HeldOutCheck(5, 500, 0.80, 0.50, 200, 50, REFERENCE, 0.90, 10, 60), "fail", "memorises_worse_than_reference"),
    (HeldOutCheck(5, 100, 0.90, 0.50, 45, 5, REFERENCE, 0.90, 5, 5), "inconclusive", "memorises_cv_cannot_tell"),
    (HeldOutCheck(5, 5000, 0.95, 0.50, 2400, 150, REFERENCE, 0.94, 80, 30), "pass", "memorises_but_generalises"),
    (HeldOutCheck(5, 300, 0.90, 0.50, 140, 20, None, float("nan"), 0, 0), "pass", "memorises_but_generalises"),
])
def test_decision_follows_its_tests(check, status, reason):
    verdict = heldout_verdict(check, {})
    assert (verdict.status, verdict.reason) == (status, reason)
    if status == "pass" and check.reference is not None:
        assert verdict.numbers["cv_gap_high"] < MATERIAL_GAP


@pytest.mark.slow
def test_pmv_score_cross_validates_only_a_memoriser_and_the_result_round_trips():
    X, y = make_classification(400, n_features=8, n_informative=5, flip_y=0.1, random_state=0)
    forest = pmv_score(RandomForestClassifier(n_estimators=30, random_state=0), X, y, random_state=0)
    assert forest.statistic < 0.3 and forest.heldout is not None
    again = Result.from_dict(forest.to_dict())
    assert again.heldout.accuracy == forest.heldout.accuracy and again.verdict().status == forest.verdict().status
    assert forest.verdict().status != "inconclusive" or forest.verdict().reason == "memorises_cv_cannot_tell"
    stump = pmv_score(DecisionTreeClassifier(max_depth=2, random_state=0), X, y, random_state=0)
    assert stump.heldout is None  # PMV can tell: no cross-validation
    with pytest.raises(InputError, match="`heldout` must be None, True or False"):
        pmv_score(DecisionTreeClassifier(), X, y, heldout="yes")


@pytest.mark.slow
def test_memorisers_are_told_apart_on_a_real_table():
    """Boosting generalises although it memorises; 1-nearest-neighbour on unscaled columns does not."""
    X, y = load_breast_cancer(return_X_y=True)
    boosted = pmv_score(HistGradientBoostingClassifier(max_iter=100, random_state=0), X, y, random_state=0)
    one_nn = pmv_score(KNeighborsClassifier(1), X, y, random_state=0)
    assert boosted.verdict().reason == "memorises_but_generalises", say_pmv(boosted, boosted.verdict())
    assert one_nn.verdict().status == "fail", say_pmv(one_nn, one_nn.verdict())
    text = say_pmv(one_nn, one_nn.verdict())
    assert "cross-validated accuracy" in text and "scaled logistic regression" in text
    assert 0 < HELDOUT_LEVEL < 1
