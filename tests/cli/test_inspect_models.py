"""`fitaudit inspect --models`: one other run (the agreement estimate compares two), several refused in one line."""

from __future__ import annotations

from fitaudit.cli import main


def test_inspect_refuses_several_other_runs_in_one_line(tmp_path, capsys):
    others = [str(tmp_path / f"run{i}.onnx") for i in range(4)]
    assert main(["inspect", "--model", str(tmp_path / "model.onnx"), "--data", str(tmp_path / "d.npz"),
                 "--models", *others]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert "`--models` takes one other run of the same training" in err
    assert f"got 4 files: {', '.join(others)}" in err
