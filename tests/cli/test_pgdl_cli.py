"""``fitaudit pgdl score|leaderboard|zoo build`` and ``fitaudit measures list``."""

from __future__ import annotations

import json
import types

import pytest

from fitaudit.cli import main
from fitaudit.measures import list_measures
from fitaudit.options import RunOptions
from fitaudit.pgdl.harness import score_task


def test_measures_list(capsys) -> None:
    assert main(["measures", "list", "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)["measures"]
    assert [e["name"] for e in entries] == list_measures()
    for entry in entries:
        assert {"family", "direction", "needs_data", "needs_init", "needs_grad", "cost", "summary"} <= set(entry)
    assert main(["measures", "list"]) == 0
    text = capsys.readouterr().out
    assert f"{len(entries)} registered measures" in text and "weight_norm" in text


def test_score_json_matches_the_library(tiny_pgdl_task, capsys) -> None:
    argv = ["pgdl", "score", "--task", str(tiny_pgdl_task), "--measure", "weight_norm,noisy_gap", "--json", "--quiet"]
    assert main(argv) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["type"] == "TaskScores"
    expected = score_task(tiny_pgdl_task, ["weight_norm", "noisy_gap"], options=RunOptions(progress=False))
    for got, want in zip(payload["scores"], expected.scores):
        assert got["measure"] == want.measure
        assert got["values"] == want.values
        assert got["kendall"] == pytest.approx(want.kendall)
        assert got["official_cmi"] == pytest.approx(want.official_cmi)
    assert main(["pgdl", "score", "--task", str(tiny_pgdl_task), "--measure", "weight_norm", "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "predicts the generalization gap best by the competition's score" in text
    assert "Kendall tau" in text and "weight_norm" in text


@pytest.mark.slow
def test_leaderboard_writes_table_plot_and_json(tiny_pgdl_task, tmp_path, capsys) -> None:
    out = tmp_path / "board"
    argv = ["pgdl", "leaderboard", "--task", str(tiny_pgdl_task), "--measure", "weight_norm",
            "--measure", "noisy_gap", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "On 1 task, noisy_gap" in text and "of 2 measures" in text  # the wording is report.verdicts'
    assert {p.name for p in out.iterdir()} >= {"leaderboard.json", "leaderboard.md", "leaderboard.png", "checkpoints"}
    saved = json.loads((out / "leaderboard.json").read_text())
    assert saved["type"] == "Leaderboard" and {r["measure"] for r in saved["rows"]} == {"weight_norm", "noisy_gap"}
    assert "| 1 | " in (out / "leaderboard.md").read_text()


def test_bad_input_is_one_line_and_exit_2(tiny_pgdl_task, tmp_path, capsys) -> None:
    cases = [
        (["pgdl", "score", "--task", str(tiny_pgdl_task)], "`--measure` is required"),
        (["pgdl", "score", "--task", str(tiny_pgdl_task), "--measure", "nope"], "must be a registered measure"),
        (["pgdl", "score", "--task", str(tmp_path / "missing"), "--measure", "weight_norm"], "is not a folder"),
        (["pgdl", "score", "--task", str(tiny_pgdl_task), "--measure", ","], "`--measure` must name measures"),
        (["pgdl", "zoo", "build", "--zoo", "cifar", "--out", str(tmp_path)], "invalid choice"),
    ]
    for argv, message in cases:
        assert main([*argv, "--quiet"] if argv[1] != "zoo" else argv) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1


def test_zoo_build_calls_the_library(monkeypatch, tmp_path, capsys) -> None:
    zoo_task = pytest.importorskip("fitaudit.pgdl.zoo_task")
    calls = {}

    def fake_build(out, zoo, **kwargs):
        calls.update(out=out, zoo=zoo, **kwargs)
        member = types.SimpleNamespace(model_id="1", hparams={"width": 8}, train_acc=1.0, test_acc=0.9,
                                       epochs=3, converged=True, seconds=0.5)
        spec = types.SimpleNamespace(name="digits-quick", grid={"width": [8]})
        return out, types.SimpleNamespace(spec=spec, members=[member], build_seconds=0.5)

    monkeypatch.setattr(zoo_task, "build_zoo_task", fake_build)
    argv = ["pgdl", "zoo", "build", "--zoo", "digits", "--size", "quick", "--out", str(tmp_path / "t"), "--seed", "3", "--json", "--quiet"]
    assert main(argv) == 0
    payload = json.loads(capsys.readouterr().out)
    options = calls["options"]
    assert calls["zoo"] == "digits" and calls["size"] == "quick" and options.random_state == 3 and options.progress is False
    assert payload["n_models"] == 1 and payload["members"][0]["test_acc"] == 0.9
    assert main(argv[:-2] + ["--quiet"]) == 0
    assert "gap 0.100-0.100" in capsys.readouterr().out


@pytest.mark.slow
def test_saturated_and_always_failing_measures_are_flagged(tiny_pgdl_task, tmp_path, monkeypatch, capsys) -> None:
    from fitaudit._errors import InputError
    from fitaudit.measures.sharpness import Sharpness
    from fitaudit.measures.weight_norm import WeightNorm

    bound = Sharpness().saturation_value(60)
    assert bound == pytest.approx(2.000001907, abs=1e-9)  # 1 / (0.5 (1 - 2**-20)), the value issue 19 saw
    monkeypatch.setattr(Sharpness, "compute", lambda self, record: 1.0 / (0.5 * (1 - 2.0**-20)))

    def fail(self, record):
        raise InputError("no weights here")

    monkeypatch.setattr(WeightNorm, "compute", fail)
    argv = ["pgdl", "score", "--task", str(tiny_pgdl_task), "--measure", "sharpness,weight_norm,noisy_gap", "--quiet"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "saturated on 8 of 8 models" in text
    assert "failed on all 8 models: InputError: no weights here" in text
    assert main([*argv, "--json"]) == 0
    scores = {s["measure"]: s for s in json.loads(capsys.readouterr().out)["scores"]}
    assert "saturated on 8 of 8 models (the search's bound, value 2.000001907)" in scores["sharpness"]["note"]
    assert "saturated" not in scores["noisy_gap"]["note"]
    out = tmp_path / "board"
    assert main(["pgdl", "leaderboard", "--task", str(tiny_pgdl_task), "--measure", "sharpness,weight_norm,noisy_gap",
                 "--out", str(out), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "saturated on 8 of 8 models" in text and "failed on all 8 models: InputError: no weights here" in text
    rows = {r["measure"]: r for r in json.loads((out / "leaderboard.json").read_text())["rows"]}
    assert rows["sharpness"]["n_saturated"] == 8 and rows["noisy_gap"]["n_saturated"] == 0
    assert "saturated on 8 of 8 models" in (out / "leaderboard.md").read_text()


def test_measures_list_names_the_formats(capsys) -> None:
    assert main(["measures", "list", "--json"]) == 0
    formats = {e["name"]: e["formats"] for e in json.loads(capsys.readouterr().out)["measures"]}
    assert formats["spectral_alpha"] == ["torch", "onnx"] and formats["sharpness"] == ["torch"]


def test_rank_ordering_shows_ties() -> None:
    from fitaudit.cli.pgdl import _ordering

    assert _ordering(["a", "b", "c", "d"], {"a": 2.0, "b": 2.0, "c": 1.0, "d": 0.5}) == "a = b > c > d"
