"""The baseline and calibration checks as audit parts (auditing/table_checks.py): run, reread, skipped; and
the honest model's whole audit."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier

import fitaudit
from fitaudit.auditing.table_checks import TABLE_CHECKS
from fitaudit.options import RunOptions
from fitaudit.report import load_audit
from fitaudit.report.verdicts import read_part

#: this module's audits run without progress bars
QUIET = RunOptions(progress=False)


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.4, stratify=y, random_state=0)
    return X_train, X_test, y_train, y_test


def _audit(model, cancer, tmp_path, *, train=True):
    X_train, X_test, y_train, y_test = cancer
    return fitaudit.audit(model, pd.concat([X_test, y_test], axis=1), label="target",
                          train_data=pd.concat([X_train, y_train], axis=1) if train else None,
                          checks=list(TABLE_CHECKS), checkpoint_dir=tmp_path, options=QUIET)


def test_the_parts_of_the_issues_models(cancer, tmp_path):
    X_train, _, y_train, _ = cancer
    stump = _audit(DecisionTreeClassifier(max_depth=1, random_state=0).fit(X_train, y_train), cancer,
                   tmp_path / "stump")
    assert stump.part("baseline").status == "fail" and stump.part("baseline").verdict.reason == \
        "worse_than_reference"
    assert stump.part("baseline").numbers["reference accuracy"] == pytest.approx(0.965, abs=5e-4)
    bayes = _audit(GaussianNB().fit(X_train, y_train), cancer, tmp_path / "bayes")
    assert bayes.part("calibration").status == "fail"
    honest = _audit(make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(X_train, y_train),
                    cancer, tmp_path / "honest")
    assert {p.id: p.status for p in honest.parts} == {"baseline": "pass", "calibration": "pass"}
    assert honest.part("baseline").result.majority_label == "1"  # named as the model's class
    assert len(honest.part("calibration").settings["reliability"]) >= 1
    saved = json.loads(json.dumps(honest.to_dict()))
    again = load_audit(saved)
    for part in again.parts:
        assert read_part(part) == (part.status, part.sentence)
        assert part.verdict == honest.part(part.id).verdict


def test_without_training_data_and_without_probabilities(cancer, tmp_path):
    X_train, _, y_train, _ = cancer
    svm = make_pipeline(StandardScaler(), LinearSVC()).fit(X_train, y_train)
    result = _audit(svm, cancer, tmp_path, train=False)
    baseline, calibration = result.part("baseline"), result.part("calibration")
    assert baseline.verdict.reason == "beats_majority" and baseline.result.majority_source == "scored labels"
    assert "no training data was given" in baseline.sentence
    assert calibration.status == "skipped" and calibration.verdict.reason == "no_probabilities"
    assert "gives decision scores, not probabilities" in calibration.sentence


def test_one_class_scored_rows_get_parts_not_a_traceback(cancer, tmp_path):
    X_train, X_test, y_train, y_test = cancer
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(X_train, y_train)
    keep = np.asarray(y_test) == 1
    one = fitaudit.audit(model, pd.concat([X_test[keep], y_test[keep]], axis=1), label="target",
                         train_data=pd.concat([X_train, y_train], axis=1), checks=list(TABLE_CHECKS),
                         checkpoint_dir=tmp_path, options=QUIET)
    assert {p.id for p in one.parts} == {"baseline", "calibration"}
    assert one.part("baseline").status in ("fail", "inconclusive")  # the majority class is right on every row


@pytest.mark.slow
def test_the_four_checks_score_the_rows_no_more_than_the_accuracy_alone(cancer):
    """The accuracy and the checks of the scored rows share one pass of the model over them
    (AuditInputs.scored_logits): the four checks add no model call on the scored rows."""
    from fitaudit.auditing.checks import SCORED_CHECKS, AccuracyCheck

    X_train, X_test, y_train, y_test = cancer
    fitted = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(X_train.to_numpy(), y_train)
    scored = []

    def scores(x):  # log-probabilities as the model's scores; counts the rows it is asked to score
        scored.append(len(x))
        return np.log(fitted.predict_proba(x))

    data = (X_test.to_numpy(), y_test.to_numpy())
    alone = fitaudit.audit(scores, data, checks=[AccuracyCheck()], options=QUIET)
    rows_alone, scored[:] = sum(scored), []
    both = fitaudit.audit(scores, data, checks=[AccuracyCheck(), *SCORED_CHECKS], options=QUIET)
    assert sum(scored) == rows_alone
    assert {p.id for p in both.parts} == {"accuracy", *(c.id for c in SCORED_CHECKS)}
    assert all(p.status != "skipped" for p in both.parts)
    assert both.part("accuracy").result.accuracy == alone.part("accuracy").result.accuracy
    assert both.part("calibration").result.mean_confidence == pytest.approx(
        fitted.predict_proba(data[0]).max(axis=1).mean())


@pytest.mark.slow
def test_the_honest_models_whole_audit_passes(cancer, tmp_path):
    """Issue 48's last done-when line: a scaled logistic regression on breast_cancer (60/40 stratified), audited
    with its training data and every check, reads `pass`: each check that ran concluded and found nothing."""
    X_train, X_test, y_train, y_test = cancer
    honest = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(X_train, y_train)
    result = fitaudit.audit(honest, pd.concat([X_test, y_test], axis=1), label="target",
                            train_data=pd.concat([X_train, y_train], axis=1), checkpoint_dir=tmp_path, options=QUIET)
    verdict = result.verdict()
    ran = {p.id: p.status for p in result.parts if p.status != "skipped"}
    assert verdict.status == "pass" and verdict.reason == "no_problem_found", (verdict.sentence, ran)
    assert ran == {"accuracy": "info", "baseline": "pass", "calibration": "pass", "slices": "pass",
                   "labels": "pass", "leakage": "pass", "pmv": "pass"}
    assert verdict.numbers["inconclusive"] == 0 and verdict.numbers["ran"] == 7
