"""An edited ``audit.json`` cannot make the page contradict itself.

Every part's verdict is decided again from its stored evidence (never read
from the file), and a file whose fields contradict each other -- a decision
beside its p-value, an accuracy beside its counts, a PMV statistic beside its
curve, a p-value that is not a finite number -- is refused with one line
naming the field, through the API and through ``fitaudit report``.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from sklearn.datasets import make_moons
from sklearn.tree import DecisionTreeClassifier

from fitaudit import InputError
from fitaudit.auditing.parts import overfit_result_part, part_from_result, pmv_result_part
from fitaudit.auditing.result import AuditResult, load_audit
from fitaudit.data import GaussianMargin
from fitaudit.leakage import tabular_leakage
from fitaudit.overfit import LinearGradientAEG, overfit_test, train_logistic_models
from fitaudit.pmv import pmv_score
from fitaudit.stats import accuracy, agreement


@pytest.fixture(scope="module")
def saved():
    """An audit's parts with real results: a rejected overfitting test, a 16-of-54 accuracy, a memorising tree."""
    dist = GaussianMargin(500)
    x, y = dist.sample(1000, random_state=13)  # trained on half the scored set: rejected (tests/overfit)
    dependent = train_logistic_models(x[:500], y[:500], steps=300, first_coordinate_penalty=1e4, random_state=14)[0]
    test = overfit_test(dependent, x, y, LinearGradientAEG(10.0, dist))
    assert test.reject and test.pvalue < 0.05
    labels = np.arange(54) % 2
    predicted = np.where(np.arange(54) < 16, labels, 1 - labels)  # 16 of 54 right
    measured = accuracy(labels, predicted)
    xm, ym = make_moons(120, noise=0.3, random_state=0)
    tree = pmv_score(DecisionTreeClassifier(random_state=0), xm, ym, rates=[0.1, 0.2, 0.3], random_state=0)
    rng = np.random.default_rng(0)
    x_train = rng.random((2000, 4))
    leak = tabular_leakage(rng.random((600, 4)), x_train)  # enough rows for both tests to pass with power
    runs = agreement(predicted, predicted, measured=measured)
    parts = [overfit_result_part("overfit-test", "t", test, role="test"),
             part_from_result("accuracy", "first", "a", measured),
             pmv_result_part(tree), part_from_result("leakage", "first", "l", leak),
             part_from_result("agreement", "first", "g", runs)]
    result = AuditResult(title="t", subject={}, parts=parts, settings={}, environment={}, random_state=0,
                         seconds=0.0, created="now")
    assert [p.status for p in parts] == ["fail", "info", "inconclusive", "pass", "inconclusive"]  # memoriser; copies
    return result.to_dict()


def _part(data, part_id):
    return next(p for p in data["parts"] if p["id"] == part_id)


def _load(data, edit):
    copy = json.loads(json.dumps(data))
    edit(copy)
    return load_audit(json.loads(json.dumps(copy)), name="AUDIT_JSON")


CONTRADICTIONS = {
    "reject beside p = 1": (lambda d: _part(d, "overfit-test")["result"]["pairwise"].update(reject=False, pvalue=1.0),
                            "parts[0].result.pairwise` contradict each other: `pvalue` is 1"),
    "the headline reject beside its test's": (lambda d: _part(d, "overfit-test")["result"].update(reject=False),
                                              "parts[0].result` contradict each other: `reject` is false"),
    "accuracy 0.99 beside 16 of 54": (lambda d: _part(d, "accuracy")["result"].update(accuracy=0.99),
                                      "`accuracy` is 0.99, but its evidence gives 0.296"),
    "a PMV statistic off its curve": (lambda d: _part(d, "pmv")["result"].update(statistic=0.95, score=0.95),
                                      "parts[2].result` contradict each other: `statistic` is 0.95"),
    "an agreement estimate off its counts": (lambda d: _part(d, "agreement")["result"].update(estimate=0.5),
                                             "`estimate` is 0.5, but its evidence gives 1"),
    "the Test A decision off its intervals": (lambda d: _part(d, "overfit-test")["result"]["ci"].update(
        reject=not _part(d, "overfit-test")["result"]["ci"]["reject"]), "result.ci` contradict each other"),
}


@pytest.mark.parametrize("case", sorted(CONTRADICTIONS))
def test_a_file_that_contradicts_itself_is_refused_in_one_line(saved, case):
    edit, message = CONTRADICTIONS[case]
    with pytest.raises(InputError) as caught:
        _load(saved, edit)
    text = str(caught.value)
    assert text.startswith("`AUDIT_JSON`: the fields of `parts[") and "\n" not in text and message in text, text


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, None, 7.5])
def test_a_p_value_that_is_not_a_probability_is_refused(saved, value):
    copy = json.loads(json.dumps(saved))
    _part(copy, "overfit-test")["result"]["pvalue"] = value
    text = json.dumps(copy)  # NaN and Infinity as Python's json writes (and reads) them
    with pytest.raises(InputError, match=r"field `parts\[0\]\.result\.pvalue` must be (a finite number )?in \[0, 1\]"):
        load_audit(json.loads(text), name="AUDIT_JSON")


def test_an_edited_verdict_or_leakage_p_value_is_decided_again_from_the_evidence(saved):
    def edit(data):
        for part in data["parts"]:
            part["verdict"] = {"status": "pass", "reason": "fine", "numbers": {}, "sentence": "All good."}
        _part(data, "leakage")["result"]["near_pvalue"] = 1e-12  # the saved p-value is a copy: recomputed on load

    rebuilt = _load(saved, edit)
    assert [p.status for p in rebuilt.parts] == ["fail", "info", "inconclusive", "pass", "inconclusive"]
    assert all(p.sentence != "All good." and p.verdict.reason != "fine" for p in rebuilt.parts)
    leak = rebuilt.part("leakage")
    assert leak.verdict.numbers["near_pvalue"] == _part(saved, "leakage")["result"]["near_pvalue"] > 0.005


def test_a_part_without_evidence_cannot_claim_a_verdict(saved):
    def edit(data):
        _part(data, "accuracy")["result"] = None

    with pytest.raises(InputError, match=r"`parts\[1\]\.verdict\.status` is 'info', but the part holds no result"):
        _load(saved, edit)


def test_the_report_command_refuses_a_contradiction_in_one_line(saved, tmp_path, capsys):
    from fitaudit.cli import main

    copy = json.loads(json.dumps(saved))
    _part(copy, "accuracy")["result"]["accuracy"] = 0.99
    (tmp_path / "audit.json").write_text(json.dumps(copy))
    assert main(["report", str(tmp_path / "audit.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("fitaudit: error: `AUDIT_JSON`") and "\n" not in err and "16" not in err.split(":")[0]
    assert "`accuracy` is 0.99" in err and not (tmp_path / "report.html").exists()
