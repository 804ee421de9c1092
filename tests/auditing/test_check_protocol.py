"""The audit's questions are one list of checks; a new question is one new check.

* a toy check written the way ``docs/developer.md`` shows (a result that
  decides its own verdict, the words of it, a check with ``applies``,
  ``key`` and ``run``) appears in an audit, is reused on a rerun and is
  skipped with its reason where it does not apply;
* a question that cannot run never stops the others: image folders whose
  pipeline leaves no margin (resize 12 = crop 12) skip the overfitting test
  with its reason while the examiner and the first questions run; the
  examiner's reading there (pass, fail, or inconclusive in a space foreign
  to the model) is the one its numbers give.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np
import pytest
from sklearn.datasets import make_moons
from sklearn.linear_model import LogisticRegression

import fitaudit
from fitaudit.auditing import CHECKS, AuditInputs, Check
from fitaudit.auditing.parts import part_from_result
from fitaudit.options import RunOptions
from fitaudit.report.verdicts import read
from fitaudit.results import Result
from fitaudit.verdict import Verdict

#: this module's audits run without progress bars
QUIET = RunOptions(progress=False)


@dataclasses.dataclass(repr=False)
class MajorityResult(Result):
    """Accuracy of the model beside always answering the most frequent class."""

    accuracy: float
    baseline: float
    n: int

    def verdict(self, **_: Any) -> Verdict:
        numbers = {"accuracy": self.accuracy, "baseline": self.baseline}
        if self.accuracy <= self.baseline:
            return Verdict("fail", "not_above_baseline", numbers)
        return Verdict("pass", "above_baseline", numbers)


def say_majority(result, verdict, **_):
    relation = "above" if verdict.status == "pass" else "not above"
    return f"Accuracy {result.accuracy:.3f} is {relation} the majority-class baseline {result.baseline:.3f}."


@pytest.fixture()
def majority_words(monkeypatch):
    """The words of MajorityResult, in the report's table for the test only."""
    from fitaudit.report import verdicts

    monkeypatch.setitem(verdicts.WORDS, "MajorityResult", say_majority)


class MajorityCheck(Check):
    id, instrument, title = "majority", "first", "Does the model beat the majority class?"
    runs = 0

    def applies(self, inputs: AuditInputs) -> str | None:
        return None if inputs.test is not None else "the baseline needs the scored data as arrays (`data`)."

    def key(self, inputs: AuditInputs) -> Any:
        return inputs.model_key, inputs.test.x, inputs.test.y

    def run(self, inputs: AuditInputs):
        type(self).runs += 1
        y = inputs.test.y
        predicted = np.asarray(inputs.adapter.predict(inputs.inputs_of(inputs.test.x)))
        result = MajorityResult(accuracy=float(np.mean(predicted == y)),
                                baseline=float(np.max(np.bincount(y)) / len(y)), n=len(y))
        return part_from_result(self.id, self.instrument, self.title, result)


def test_a_new_question_is_one_check(tmp_path, majority_words):
    x, y = make_moons(200, noise=0.2, random_state=0)
    model = LogisticRegression().fit(x[:100], y[:100])
    checks = [*CHECKS, MajorityCheck()]
    result = fitaudit.audit(model, (x[100:], y[100:]), checks=checks, checkpoint_dir=tmp_path, options=QUIET)
    part = result.part("majority")
    assert part.status == "pass" and part.verdict.reason == "above_baseline"
    assert part.sentence == read(part.result).sentence and "majority-class baseline 0.5" in part.sentence
    assert part.result.accuracy == pytest.approx(np.mean(model.predict(x[100:]) == y[100:]))
    again = fitaudit.audit(model, (x[100:], y[100:]), checks=checks, checkpoint_dir=tmp_path, options=QUIET)
    assert again.part("majority").resumed and MajorityCheck.runs == 1
    # saved and read back: the verdict is decided again from the stored result
    from fitaudit.report import load_audit

    saved = json.loads(json.dumps(again.to_dict()))
    assert load_audit(saved).part("majority").verdict == part.verdict  # registered where it is defined
    index = [p["id"] for p in saved["parts"]].index("majority")
    saved["parts"][index]["result"]["type"] = "NoSuchResult"
    with pytest.raises(fitaudit.InputError, match=rf"`audit`: field `parts\[{index}\]\.result\.type` must be a known"):
        load_audit(saved)  # a type nobody registered is refused
    assert "majority" not in {p.id for p in fitaudit.audit(model, (x[100:], y[100:]),
                                                           options=QUIET).parts}  # only where it is listed


class EditedCheck(Check):
    id, instrument, title = "edited", "first", "A check whose code is edited between two runs"
    runs = 0

    def key(self, inputs: AuditInputs) -> Any:
        return "the same inputs"

    def run(self, inputs: AuditInputs):
        from fitaudit.stats import accuracy

        type(self).runs += 1
        return part_from_result(self.id, self.instrument, self.title, accuracy([0, 1, 1], [0, 1, 1]))


def test_a_check_edited_since_its_part_was_stored_runs_again(tmp_path, monkeypatch):
    """The part's key holds the source of the module defining the check, not only fitaudit's own."""
    import inspect

    from fitaudit.auditing import run_parts
    from fitaudit.checkpoint import CheckpointStore

    store = CheckpointStore(tmp_path)
    assert not run_parts(EditedCheck().plan(None), store, progress=False)[0].resumed
    assert run_parts(EditedCheck().plan(None), store, progress=False)[0].resumed and EditedCheck.runs == 1
    original = inspect.getsource
    monkeypatch.setattr(inspect, "getsource",
                        lambda obj: original(obj) + ("\n# edited" if obj.__name__ == __name__ else ""))
    assert not run_parts(EditedCheck().plan(None), store, progress=False)[0].resumed and EditedCheck.runs == 2


def test_every_built_in_check_is_written_as_a_new_one_would_be():
    """One part per check, from key() and run(): no built-in check plans its parts its own way."""
    for check in CHECKS:
        assert type(check).plan is Check.plan, type(check).__name__
        assert type(check).key is not Check.key and type(check).run is not Check.run, type(check).__name__
    assert len({c.id for c in CHECKS}) == len(CHECKS)


def test_the_check_list_is_the_audit(tmp_path):
    assert [c.id for c in CHECKS] == ["accuracy", "baseline", "calibration", "slices", "labels", "leakage",
                                      "leakage-penult",
                                      "agreement", "overfit-test",
                                      "overfit-train", "overfit-nmodel", "examine", "pgdl", "pmv"]
    x, y = make_moons(120, noise=0.2, random_state=0)
    result = fitaudit.audit(LogisticRegression().fit(x, y), (x, y), options=QUIET)
    skipped = {p.id: p.verdict.reason for p in result.parts if p.status == "skipped"}
    assert skipped == {"leakage": "inputs_missing", "agreement": "inputs_missing", "overfit-test": "no_aeg",
                       "examine": "no_generator", "pgdl": "no_task", "pmv": "no_learner"}


torch = pytest.importorskip("torch")
Image = pytest.importorskip("PIL.Image")


@pytest.fixture()
def no_margin(tmp_path):
    """A model whose own pipeline is resize 12 / crop 12 (no spare pixels), and an image folder."""
    from fitaudit.models import save_torch_model
    from fitaudit.models.architectures import build_architecture

    config = {"architecture": "mlp", "kwargs": {"in_features": 3 * 12 * 12, "hidden_sizes": [], "n_classes": 2},
              "n_classes": 2, "classes": ["a", "b"], "pipeline": {"resize": 12, "crop": 12}}
    torch.manual_seed(0)
    model = save_torch_model(build_architecture(config), config, tmp_path / "model")
    rng = np.random.default_rng(0)
    for name in ("a", "b"):
        (tmp_path / "images" / name).mkdir(parents=True)
        for i in range(6):
            pixels = rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(tmp_path / "images" / name / f"{i}.png")
    return model, tmp_path / "images"


def assert_examiner_contract(status: str, reason: str, numbers: dict[str, Any], space_check: Any) -> None:
    """What the examiner may say of a weakness search with reference queries
    (:func:`fitaudit.examine.decision.examination_verdict`): a worst case within ``tolerance`` of the average
    passes; below it fails, unless the space is foreign to the model: then inconclusive. Foreign: where the
    factors were screened one by one (images), an examined factor alone, far from its default, costs more than
    the screen's threshold; otherwise random factors cost more than the space check's threshold of its untouched
    accuracy. Decided here again from the numbers."""
    if space_check and "factors_alone" in space_check:
        foreign = any(not row["left_out"] and row["clean_accuracy"] - row["far_accuracy"] > space_check["factor_threshold"]
                      for row in space_check["factors_alone"])
    else:
        foreign = bool(space_check) and space_check["clean_accuracy"] - space_check["random_accuracy"] > space_check["threshold"]
    if numbers["average_accuracy"] - numbers["worst_case_accuracy"] <= numbers["tolerance"]:
        expected = ("pass", "worst_case_within_tolerance")
    elif foreign:
        expected = ("inconclusive", "foreign_space")
    else:
        expected = ("fail", "worst_case_below_average")
    assert (status, reason) == expected, numbers


@pytest.mark.slow
def test_a_question_that_cannot_run_never_stops_the_others(no_margin, tmp_path, capsys):
    from fitaudit.cli import main

    model, images = no_margin
    options = {"examiner": "random", "examine_steps": 2, "options": QUIET}
    result = fitaudit.audit(model, images=images, **options)
    overfit = result.part("overfit-test")
    assert overfit.status == "skipped" and "needs a margin around the crop" in overfit.sentence
    assert "`--resize` 12 and `--crop` 12 leave P = floor((R - C) / 2) = 0" in overfit.sentence
    assert result.part("accuracy").status == "info"
    examined = result.part("examine")
    assert examined.result.steps == 2 and examined.result.space_check is not None
    assert_examiner_contract(examined.status, examined.verdict.reason, examined.verdict.numbers,
                             examined.result.space_check)
    assert examined.settings["pipeline"]["crop"] == 12
    # on the command line, the examiner alone on such a model: the audit runs instead of refusing
    argv = ["audit", "--model", str(model), "--images", str(images), "--instruments", "examine", "--examiner",
            "random", "--examine-steps", "2", "--out", str(tmp_path / "cli"), "--quiet", "--json"]
    assert main(argv) == 0, capsys.readouterr().err
    printed = json.loads(capsys.readouterr().out)
    assert "overfit-test" not in {p["id"] for p in printed["parts"]}
    shown = next(p["verdict"] for p in printed["parts"] if p["id"] == "examine")
    saved = json.loads((tmp_path / "cli" / "audit.json").read_text())
    check = next(p["result"]["space_check"] for p in saved["parts"] if p["id"] == "examine")
    assert_examiner_contract(shown["status"], shown["reason"], shown["numbers"], check)
    # asking for the overfitting test alone, which cannot run here, is refused in one line with its reason
    argv[argv.index("examine")] = "overfit"
    assert main(argv) == 2
    assert "instruments` asks for overfit, but the overfitting test needs a margin" in capsys.readouterr().err
