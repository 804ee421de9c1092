"""An edited examiner part of an ``audit.json`` is refused or redrawn from its evidence (issue 37 item 4: "an
examiner's 0.999 next to its FAIL sentence"): the headline worst-case accuracy, the verdict's numbers, the
per-instance copies of the curves and the space check are each checked against what the part's own query logs
and curves give."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fitaudit.cli import main
from fitaudit.data.factors import Factor, FactorSpace
from fitaudit.examine.scenarios import space_check

#: one factor s; the model is right while s < 0.7 and wrong above it (a planted weak spot)
SPACE = FactorSpace([Factor("s", 0.0, 1.0, 0.5, "u")])
LABELS = np.arange(12) % 2

WORST = "worst-case accuracy (examined)"


class World:
    factor_space, labels = SPACE, LABELS

    def generate(self, instances, factors):
        return np.column_stack([factors[:, 0], LABELS[instances]])

    def describe(self):
        return {"generator": "weak-above-0.7", "labels": LABELS.tolist()}


class Model:
    n_classes = 2

    def logits(self, x):
        right = np.where(x[:, 0] < 0.7, 2.0, -2.0)
        out = np.zeros((len(x), 2))
        out[np.arange(len(x)), x[:, 1].astype(int)] = right
        return out

    def predict_proba(self, x):
        z = np.exp(self.logits(x))
        return z / z.sum(axis=1, keepdims=True)

    def predict(self, x):
        return self.logits(x).argmax(axis=1)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The audit.json of an examination that fails (worst case near 0 against an average near 0.7)."""
    from fitaudit.auditing.parts import examination_part
    from fitaudit.auditing.result import AuditResult
    from fitaudit.examine import examine
    from fitaudit.examine.decision import EXAMINE_TOLERANCE
    from fitaudit.report import save_audit

    examined = examine(Model(), World(), examiner="random", steps=4, random_state=0)
    part = examination_part(examined, World(), tolerance=EXAMINE_TOLERANCE, embedding=False)  # no t-SNE: fast
    assert part.status == "fail" and part.numbers[WORST] < 0.2, part.sentence
    result = AuditResult(title="t", subject={}, parts=[part], settings={}, environment={}, random_state=0,
                         seconds=0.0, created="now")
    out = tmp_path_factory.mktemp("examined")
    save_audit(result, out)
    return json.loads((out / "audit.json").read_text())


def _examine(data):
    return next(p for p in data["parts"] if p["id"] == "examine")


def _report(tmp_path, data, capsys, *extra):
    (tmp_path / "audit.json").write_text(json.dumps(data))
    code = main(["report", str(tmp_path / "audit.json"), *extra])
    return code, capsys.readouterr()


def _refused(tmp_path, data, capsys, *fragments):
    code, captured = _report(tmp_path, data, capsys)
    lines = captured.err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("fitaudit: error: `AUDIT_JSON`"), captured.err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert not (tmp_path / "report.html").exists()


@pytest.mark.slow
def test_the_unedited_file_is_drawn(saved, tmp_path, capsys):
    code, captured = _report(tmp_path, saved, capsys)
    assert code == 0, captured.err


def test_an_edited_worst_case_beside_its_fail_sentence_is_refused(saved, tmp_path, capsys):
    data = json.loads(json.dumps(saved))
    _examine(data)["numbers"][WORST] = 0.999
    _refused(tmp_path, data, capsys, f"numbers['{WORST}']` is 0.999", f"evidence gives {_examine(saved)['numbers'][WORST]!r}")


@pytest.mark.slow
def test_an_edited_verdict_is_decided_again_from_the_query_log(saved, tmp_path, capsys):
    data = json.loads(json.dumps(saved))
    part = _examine(data)
    part["verdict"].update(status="pass", sentence="The worst case is fine.")
    part["verdict"]["numbers"]["worst_case_accuracy"] = 0.999
    code, captured = _report(tmp_path, data, capsys, "--json")
    assert code == 0, captured.err
    overall = json.loads(captured.out)["verdict"]
    assert overall["status"] == "fail" and overall["numbers"]["problems"] == 1
    page = (tmp_path / "report.html").read_text()
    assert "The worst case is fine." not in page and "0.999" not in page
    assert f"worst-case accuracy {_examine(saved)['numbers'][WORST]:.2f}" in page


@pytest.mark.parametrize(("field", "message"), [
    ("min_true_class_probability", "`min_true_class_probability[0]` is 0.999, but its evidence gives"),
    ("final_true_class_probability", "`final_true_class_probability[0]` is 0.999, but its evidence gives"),
])
def test_an_edited_copy_of_the_curves_is_refused(saved, tmp_path, capsys, field, message):
    data = json.loads(json.dumps(saved))
    _examine(data)["result"][field][0] = 0.999
    _refused(tmp_path, data, capsys, "parts[", message)


def _with_space_check(saved):
    """The saved file with the space check the examination's reference queries give (untouched inputs all right:
    a drop of about 0.3, a foreign space)."""
    data = json.loads(json.dumps(saved))
    result = _examine(data)["result"]
    reference = result["reference_queries"]
    correct = np.asarray(reference["predicted"]) == np.asarray(reference["label"])
    result["space_check"] = space_check(np.ones(12, dtype=bool), correct, reference="the untouched instances")
    assert result["space_check"]["foreign"] is True
    return data


@pytest.mark.slow
def test_a_space_check_from_the_evidence_makes_the_fail_inconclusive(saved, tmp_path, capsys):
    code, captured = _report(tmp_path, _with_space_check(saved), capsys, "--json")
    assert code == 0, captured.err
    assert json.loads(captured.out)["verdict"]["status"] == "inconclusive"


@pytest.mark.parametrize(("key", "value", "message"), [
    ("random_accuracy", 0.2, "`space_check.random_accuracy` is 0.2, but its evidence gives 0.7"),
    ("foreign", False, "`space_check.drop`"),
    ("threshold", 0.9, "`space_check.threshold` is 0.9, but its evidence gives 0.25"),
])
def test_an_edited_space_check_is_refused(saved, tmp_path, capsys, key, value, message):
    data = _with_space_check(saved)
    check = _examine(data)["result"]["space_check"]
    check[key] = value
    if key == "foreign":  # flipped with a drop to match: the drop no longer follows from the accuracies
        check["drop"] = 0.0
    _refused(tmp_path, data, capsys, message)
