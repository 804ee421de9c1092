"""The checks of the scored rows (baseline, calibration, slices, labels) through `fitaudit audit` and `inspect`.

On breast_cancer (60/40 stratified split) saved as CSV tables and .skops
models: `inspect` answers the four checks with their words and in --json; a
model predicting with its labels' order swapped gets an audit (no stop) whose
baseline part fails and names the labels' order, while the standalone
`inspect` still stops at it; and the bad input of issue 48 (no predict_proba,
one-class scored rows, a label the model never saw, a slice column with every
value missing) gives a clear line or a skipped part, never a traceback.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import skops.io
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from fitaudit.cli import main

SCORED = ["baseline", "calibration", "slices", "labels"]


def assert_one_line_error(err: str, *fragments: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("fitaudit: error: ") and all(f in lines[0] for f in fragments), lines[0]
    assert "Traceback" not in err


@pytest.fixture(scope="module")
def cancer(tmp_path_factory):
    """breast_cancer as test.csv and train.csv (label `target`), and the fitted split."""
    folder = tmp_path_factory.mktemp("cancer")
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.4, stratify=y, random_state=0)
    pd.concat([X_test, y_test], axis=1).to_csv(folder / "test.csv", index=False)
    pd.concat([X_train, y_train], axis=1).to_csv(folder / "train.csv", index=False)
    return folder, X_train, X_test, y_train, y_test


def _save(model, folder, name):
    path = folder / f"{name}.skops"
    skops.io.dump(model, path)
    return str(path)


def _honest(cancer):
    _, X_train, _, y_train, _ = cancer
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(X_train, y_train)


def _inspect(capsys, *args):
    assert main(["inspect", *args, "--quiet", "--json"]) == 0
    return {p["id"]: p for p in json.loads(capsys.readouterr().out)["first_questions"]}


def _audit(capsys, out, *args):
    code = main(["audit", *args, "--label", "target", "--out", str(out), "--quiet"])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, {p["id"]: p for p in json.loads((out / "audit.json").read_text())["parts"]}


@pytest.mark.slow
def test_inspect_answers_the_four_checks_with_their_words(capsys, cancer):
    folder = cancer[0]
    model = _save(_honest(cancer), folder, "honest")
    data = ["--model", model, "--data", str(folder / "test.csv"), "--label", "target"]
    parts = _inspect(capsys, *data, "--train-data", str(folder / "train.csv"))
    assert list(parts) == ["accuracy", *SCORED, "leakage", "agreement"]
    assert {i: parts[i]["verdict"]["status"] for i in SCORED} == {
        "baseline": "pass", "calibration": "pass", "slices": "pass", "labels": "pass"}
    assert parts["baseline"]["verdict"]["reason"] == "beats_baselines"
    assert parts["baseline"]["numbers"]["reference accuracy"] == pytest.approx(0.965, abs=5e-4)
    assert parts["calibration"]["numbers"]["ECE"] < 0.05
    # the words: the headline of each part, as the report words it
    assert main(["inspect", *data, "--train-data", str(folder / "train.csv"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "[ok  ] Is the model better than a simple baseline?: Passes: the model beats the majority class" in out
    assert "[ok  ] Are the model's probabilities right?: Passes: no miscalibration shown" in out
    assert "[ok  ] Where does the model fail? (weak slices): " in out
    assert "[ok  ] Are the scored labels right? (label problems): " in out
    # without training data: the majority class of the scored labels only, and what is missing named as the option
    alone = _inspect(capsys, *data)
    assert alone["baseline"]["verdict"]["reason"] == "beats_majority"
    assert "no training data was given (`--train-data`)" in alone["baseline"]["verdict"]["sentence"]


@pytest.mark.slow
def test_inspect_skips_calibration_and_labels_without_predict_proba(capsys, cancer):
    folder, X_train, _, y_train, _ = cancer
    model = _save(make_pipeline(StandardScaler(), LinearSVC()).fit(X_train, y_train), folder, "svm")
    parts = _inspect(capsys, "--model", model, "--data", str(folder / "test.csv"), "--label", "target")
    for part in ("calibration", "labels"):
        assert parts[part]["verdict"]["status"] == "skipped" and parts[part]["verdict"]["reason"] == "no_probabilities"
        assert "gives decision scores, not probabilities" in parts[part]["verdict"]["sentence"]
    assert parts["baseline"]["verdict"]["status"] == "pass" and parts["slices"]["verdict"]["status"] != "skipped"


@pytest.mark.slow
def test_a_model_predicting_in_another_label_order_gets_an_audit_whose_baseline_fails(capsys, cancer, tmp_path):
    """Fit on the swapped labels 1 - y: every label in the model's output order means the other class."""
    folder, X_train, _, y_train, _ = cancer
    swapped = _save(make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(X_train, 1 - y_train),
                    folder, "swapped")
    code, parts = _audit(capsys, tmp_path / "out", "--model", swapped, "--data", str(folder / "test.csv"))
    assert code == 0  # the audit ran to its report; its verdict fails
    baseline = parts["baseline"]["verdict"]
    assert baseline["status"] == "fail" and baseline["reason"] == "no_better_than_majority"
    assert baseline["numbers"]["at_chance"] is True and baseline["numbers"]["accuracy"] < 0.1
    sentence = baseline["sentence"]
    assert sentence.startswith("Fails: the model is no better than always predicting the majority class")
    assert "is at or below chance" in sentence and "not the model's classes in its order" in sentence
    assert "labels are the classes the model was trained on: 0, 1" in sentence
    assert parts["accuracy"]["numbers"]["accuracy"] < 0.1
    # the other parts still ran, each on what it measures
    assert all(parts[i]["verdict"]["status"] != "skipped" for i in ("calibration", "slices", "labels"))
    # --fail-on takes the four checks' ids: the failed baseline gives exit 1 (its part reused), a passing part 0
    again = ["audit", "--model", swapped, "--data", str(folder / "test.csv"), "--label", "target", "--out",
             str(tmp_path / "out"), "--quiet", "--fail-on"]
    assert main([*again, "baseline"]) == 1
    assert "--fail-on: " in capsys.readouterr().err
    # an honest model has no word of chance
    honest_model = _save(_honest(cancer), folder, "honest")
    _, honest = _audit(capsys, tmp_path / "honest", "--model", honest_model, "--data", str(folder / "test.csv"))
    assert "chance" not in honest["baseline"]["verdict"]["sentence"]
    assert honest["baseline"]["verdict"]["numbers"]["at_chance"] is False
    passing = [i for i in ("baseline", "calibration", "slices", "labels") if honest[i]["verdict"]["status"] == "pass"]
    assert "baseline" in passing
    assert main(["audit", "--model", honest_model, "--data", str(folder / "test.csv"), "--label", "target",
                 "--out", str(tmp_path / "honest"), "--quiet", "--fail-on", ",".join(passing)]) == 0
    capsys.readouterr()
    # inspect, a standalone command, still stops at it with the same hint
    assert main(["inspect", "--model", swapped, "--data", str(folder / "test.csv"), "--label", "target"]) == 2
    assert_one_line_error(capsys.readouterr().err, "at or below chance", "not the model's classes in its order")


@pytest.mark.slow
def test_bad_input_of_the_four_checks_through_the_audit(capsys, cancer, tmp_path):
    folder, X_train, X_test, y_train, y_test = cancer
    test = ["--data", str(folder / "test.csv")]
    # a model without predict_proba: calibration and labels skipped, each saying why
    svm = _save(make_pipeline(StandardScaler(), LinearSVC()).fit(X_train, y_train), folder, "svm")
    code, parts = _audit(capsys, tmp_path / "svm", "--model", svm, *test)
    assert code == 0
    for part in ("calibration", "labels"):
        assert parts[part]["verdict"]["status"] == "skipped" and parts[part]["verdict"]["reason"] == "no_probabilities"
        assert "LinearSVC) gives decision scores, not probabilities" in parts[part]["verdict"]["sentence"]
    honest = _save(_honest(cancer), folder, "honest")
    # one-class scored rows: a clear line
    one = tmp_path / "one.csv"
    pd.concat([X_test, y_test], axis=1)[np.asarray(y_test) == 1].to_csv(one, index=False)
    assert main(["audit", "--model", honest, "--data", str(one), "--label", "target", "--out",
                 str(tmp_path / "one"), "--quiet"]) == 2
    assert_one_line_error(capsys.readouterr().err, "all 143 examples have the label 1",
                          "examples of at least two classes are needed")
    # a label the model never saw: a clear line
    unseen = tmp_path / "unseen.csv"
    frame = pd.concat([X_test, y_test], axis=1)
    frame.loc[frame.index[0], "target"] = 7
    frame.to_csv(unseen, index=False)
    assert main(["audit", "--model", honest, "--data", str(unseen), "--label", "target", "--out",
                 str(tmp_path / "unseen"), "--quiet"]) == 2
    assert_one_line_error(capsys.readouterr().err, "holds labels the model does not have: 7")
    # a slice column with every value missing: the slices part says it, the others run
    empty = tmp_path / "empty.csv"
    frame = pd.concat([X_test, y_test], axis=1)
    frame["mean radius"] = np.nan
    frame.to_csv(empty, index=False)
    boosting = _save(HistGradientBoostingClassifier(random_state=0).fit(X_train, y_train), folder, "hgb")
    code, parts = _audit(capsys, tmp_path / "empty", "--model", boosting, "--data", str(empty))
    assert code == 0
    assert "Not sliced: 'mean radius': every value is missing." in parts["slices"]["verdict"]["sentence"]
    assert all(parts[i]["verdict"]["status"] != "skipped" for i in SCORED)
