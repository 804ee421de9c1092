"""``fitaudit examine`` on the Shapes scenario with a tiny trained CNN."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fitaudit.cli import main

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from fitaudit.data.shapes import make_dataset
    from fitaudit.models.training import train_classifier

    data = make_dataset(4, 4, classes=["sphere", "cube"], image_size=16, random_state=0)
    folder = tmp_path_factory.mktemp("model")
    train_classifier(data.images, data.labels, architecture="shapes_alexnet", kwargs={"width": 4}, epochs=1,
                     checkpoint_dir=folder, progress=False, metadata={"class_names": data.class_names})
    return folder / "model"


def _run(capsys, argv):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_json_result_and_files(model_dir, tmp_path, capsys):
    out = tmp_path / "out"
    code, stdout, _ = _run(capsys, ["examine", "--model", str(model_dir), "--examiner", "random", "--steps", "3",
                                    "--instances", "3", "--out", str(out), "--json", "--quiet"])
    assert code == 0
    result = json.loads(stdout)
    assert result["type"] == "ExaminationResult" and result["steps"] == 3
    assert len(result["final_loss"]) == 3 and result["class_names"] == ["sphere", "cube"]
    assert result["n_model_queries"] == 9 and result["queries"] == {}
    assert sorted(np.bincount(result["labels"])) == [1, 2]  # taken class by class
    for name in ("examination.json", "queries.npz", "summary.md", "curves.png", "histograms.png", "worst-inputs.png"):
        assert (out / name).is_file(), name
    with np.load(out / "queries.npz") as queries:
        assert len(queries["loss"]) == 9 and "camera_elevation" in queries.files


def test_human_summary_and_resume(model_dir, tmp_path, capsys):
    argv = ["examine", "--model", str(model_dir), "--examiner", "random", "--steps", "4", "--instances", "2",
            "--out", str(tmp_path), "--range", "camera_elevation=-10,10", "--range", "sun_azimuth=90", "--quiet"]
    code, stdout, _ = _run(capsys, argv)
    assert code == 0
    assert "Average true-class probability at step T" in stdout and "worst case found" in stdout
    first = json.loads((tmp_path / "examination.json").read_text())
    assert first["factor_space"]["sun_azimuth"]["low"] == 90.0
    code, _, _ = _run(capsys, argv)  # resumes from the checkpoints: same numbers
    assert json.loads((tmp_path / "examination.json").read_text())["final_loss"] == first["final_loss"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--steps", "0"], "`steps` must be a positive integer; got 0."),
        (["--range", "camera_elevation=30,-30"], "`ranges['camera_elevation']` is inverted"),
        (["--range", "zoom=1,2"], "`ranges` names unknown factor(s) zoom"),
        (["--range", "camera_elevation"], "`--range` must look like NAME=LOW,HIGH or NAME=VALUE"),
        (["--examiner", "annealing"], "`name` must be one of"),
        (["--scenario", "mnist"], "`--scenario` must be one of shapes"),
        (["--instances", "0"], "`--instances` must be a positive integer"),
        (["--classes", "sphere,cube,torus"], "`generator.labels` holds label 2 but the model outputs 2 classes"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(model_dir, tmp_path, capsys, extra, message):
    argv = ["examine", "--model", str(model_dir), "--examiner", "random", "--steps", "2", "--instances", "3",
            "--out", str(tmp_path), "--quiet", *extra]
    code, stdout, stderr = _run(capsys, argv)
    assert code == 2 and stdout == ""
    assert message in stderr and len(stderr.strip().splitlines()) == 1


def test_missing_model_file(tmp_path, capsys):
    code, _, stderr = _run(capsys, ["examine", "--model", str(tmp_path / "none.onnx"), "--out", str(tmp_path)])
    assert code == 2 and stderr.startswith("fitaudit: error:")


def test_reproduce_examiner_variants_quick(tmp_path, capsys):
    out = tmp_path / "out"
    code, stdout, _ = _run(capsys, ["reproduce", "examiner-variants", "--quick", "--out", str(out),
                                    "--models-dir", str(tmp_path / "models"), "--quiet"])
    assert code == 0
    assert "examiner-variants (quick mode):" in stdout and "RL factor order" in stdout
    for suffix in ("json", "md", "png"):
        assert (out / f"examiner-variants-quick.{suffix}").is_file()
    assert any((tmp_path / "models").iterdir())
