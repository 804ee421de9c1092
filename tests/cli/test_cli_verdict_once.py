"""Issue 51, item 6: every command prints its verdict's word once.

``fitaudit overfit`` printed "Inconclusive (m = 30): Inconclusive: ...": its
own prefix before the headline, which leads with the verdict's word;
``fitaudit inspect`` printed "Is the model better than a simple baseline?
[pass]: Passes: ...". Each command's printed output is read here with
:func:`headline_check.doubled_verdict_lines`, on the tests' tiny models and
data (the fixtures of the neighbouring command tests).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import test_cli_names
import test_cli_overfit
import test_examine_cli
import test_leakage_cli

from fitaudit.cli import main
from headline_check import doubled_verdict_lines

# the neighbouring command tests' tiny models and data, as fixtures of this module
table, files = test_cli_names.table, test_cli_overfit.files
model_dir, rows = test_examine_cli.model_dir, test_leakage_cli.rows


def _printed(capsys: pytest.CaptureFixture[str], *argv: object) -> str:
    code = main([str(a) for a in argv])
    out = capsys.readouterr().out
    assert code == 0, out
    return out


def _says_once(out: str) -> None:
    assert out.strip() and doubled_verdict_lines(out) == [], doubled_verdict_lines(out)


def test_the_check_sees_the_doubled_words() -> None:
    """What the commands printed before the fix is caught; the fixed lines are not."""
    for line in ("Inconclusive (m = 30): Inconclusive: accuracy 0.150 is at or below chance (0.325).",
                 "Not rejected (m = 300): Passes: no dependence on this data shown (p = 0.5 >= 0.05).",
                 "Rejected (m = 40): Fails: the model is not independent of this data (p = 0.01 < 0.05).",
                 "Is the model better than a simple baseline? [pass]: Passes: the model beats the majority class.",
                 "  [????] Overfitting test: Inconclusive: Inconclusive: not rejected."):
        assert doubled_verdict_lines(line) == [line]
    for line in ("Inconclusive: accuracy 0.150 is at or below chance (0.325), so the model was not tested.",
                 "  [FAIL] Overfitting test on the scored data: Fails: the model is not independent of this data.",
                 "  [ok  ] Is the model better than a simple baseline?: Passes: the model beats the majority class.",
                 "Inconclusive: not rejected (p = 0.4 >= 0.05), but the shifts change too few answers."):
        assert doubled_verdict_lines(line) == []


def test_overfit_says_its_verdict_once(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """The overfit command's tiny MLP on random canvases (its random labels put it at chance: inconclusive)."""
    out = _printed(capsys, "overfit", "--model", files["model"], "--data", files["data"], "--eps", 1,
                   "--margin", 3, "--quiet")
    _says_once(out)
    assert out.startswith("Inconclusive: accuracy ")  # the headline first, its word once
    assert "m = 40 images" in out  # the sample size the old prefix carried


def test_inspect_and_audit_say_their_verdicts_once(table: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = _printed(capsys, "inspect", "--model", table / "tree.skops", "--data", table / "test.csv", "--label", "y",
                   "--quiet")
    _says_once(out)
    assert "Is the model better than a simple baseline?: " in out and "[pass]" not in out
    _says_once(_printed(capsys, "audit", "--model", table / "tree.skops", "--data", table / "test.csv", "--label",
                        "y", "--out", tmp_path / "audit", "--quiet"))


def test_pmv_leakage_and_pgdl_say_their_verdicts_once(rows: tuple[Path, object, object], tiny_pgdl_task: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    _says_once(_printed(capsys, "pmv", "--dataset", "moons", "--estimator", "decision_tree", "--param", "max_depth=3",
                        "--quiet"))
    folder = rows[0]  # 7 exact and 5 near copies of training rows among the scored ones
    _says_once(_printed(capsys, "leakage", "--data", folder / "test.npz", "--train-data", folder / "train.npz",
                        "--quiet"))
    _says_once(_printed(capsys, "pgdl", "score", "--task", tiny_pgdl_task, "--measure", "weight_norm", "--quiet"))


@pytest.mark.slow
def test_examine_says_its_verdict_once(model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _says_once(_printed(capsys, "examine", "--model", model_dir, "--examiner", "random", "--steps", 2, "--instances", 2,
                        "--out", tmp_path / "out", "--quiet"))
