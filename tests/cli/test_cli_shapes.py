from __future__ import annotations

import json

import numpy as np
import pytest

from fitaudit.cli import main
from fitaudit.data.io import load_npz


def _run(capsys, argv):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_render_writes_a_png_and_reports_its_factors(tmp_path, capsys):
    out = tmp_path / "torus.png"
    code, stdout, _ = _run(
        capsys, ["shapes", "render", "--class", "torus", "--factor", "camera_elevation=60", "--out", str(out), "--json"]
    )
    assert code == 0 and out.is_file()
    summary = json.loads(stdout)
    assert summary["factors"]["camera_elevation"] == 60 and summary["image_shape"] == [3, 32, 32]


def test_sheet_writes_a_png(tmp_path, capsys):
    out = tmp_path / "sheet.png"
    code, stdout, _ = _run(
        capsys, ["shapes", "sheet", "--out", str(out), "--classes", "cube,star", "--image-size", "32", "--json"]
    )
    assert code == 0 and out.stat().st_size > 1000
    assert json.loads(stdout)["rows"] == ["cube", "star"]


def test_free_position_dataset_is_canvases_with_their_margin(tmp_path, capsys):
    out = tmp_path / "free.npz"
    code, stdout, _ = _run(
        capsys,
        ["shapes", "dataset", "--objects-per-class", "1", "--renders-per-object", "2", "--free-position",
         "--margin", "3", "--range", "camera_elevation=-30,30", "--out", str(out), "--json", "--quiet"],
    )
    assert code == 0
    summary = json.loads(stdout)
    assert summary["canvas_shape"] == [3, 38, 38] and summary["factor_ranges"]["camera_elevation"] == [-30, 30]
    x, y = load_npz(out, image=True)
    assert x.shape == (24, 3, 38, 38) and len(y) == 24
    with np.load(out) as archive:
        assert int(archive["margin"]) == 3


def test_train_reports_held_out_accuracy(tmp_path, capsys):
    code, stdout, _ = _run(
        capsys,
        ["shapes", "train", "--architecture", "shapes_alexnet", "--width", "4", "--classes", "sphere,cube",
         "--objects-per-class", "2", "--renders-per-object", "2", "--validation-objects-per-class", "1",
         "--test-objects-per-class", "1", "--eval-renders-per-object", "2", "--epochs", "1",
         "--out", str(tmp_path / "run"), "--json"],
    )
    assert code == 0
    summary = json.loads(stdout)  # progress and per-epoch lines go to stderr
    assert 0.0 <= summary["test_accuracy"] <= 1.0 and summary["test_images"] == 4
    assert (tmp_path / "run" / "model" / "weights.safetensors").is_file()


def test_free_position_training_feeds_the_overfit_command(tmp_path, capsys):
    run = tmp_path / "run"
    code, stdout, _ = _run(
        capsys,
        ["shapes", "train", "--architecture", "shapes_alexnet", "--width", "4", "--classes", "sphere,cube",
         "--objects-per-class", "3", "--renders-per-object", "2", "--validation-objects-per-class", "1",
         "--test-objects-per-class", "2", "--eval-renders-per-object", "2", "--epochs", "1",
         "--free-position", "--margin", "3", "--wrap", "--out", str(run), "--json"],
    )
    assert code == 0
    summary = json.loads(stdout)
    x, y = load_npz(summary["train_data"], image=True)
    assert x.shape == (12, 3, 38, 38) and y.shape == (12,)
    code, stdout, _ = _run(
        capsys,
        ["overfit", "--model", str(run / "model"), "--data", summary["train_data"], "--eps", "1",
         "--margin", "3", "--variant", "strongest", "--quiet", "--json"],
    )
    assert code == 0
    result = json.loads(stdout)
    assert result["m"] == 12 and 0.0 <= result["pvalue"] <= 1.0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["shapes", "render", "--class", "teapot", "--out", "x.png"], "unknown class 'teapot'"),
        (["shapes", "render", "--class", "cube", "--factor", "camera_elevation=100", "--out", "x.png"],
         "factor `camera_elevation` must be in \\[-90, 90\\]"),
        (["shapes", "render", "--class", "cube", "--factor", "zoom", "--out", "x.png"], "`--factor` must look like NAME=VALUE"),
        (["shapes", "render", "--class", "cube", "--image-size", "0", "--out", "x.png"], "`image_size` must be a positive integer"),
        (["shapes", "dataset", "--objects-per-class", "1", "--range", "camera_elevation=-100,0", "--out", "d.npz"],
         "`camera_elevation` range must satisfy"),
        (["shapes", "dataset", "--objects-per-class", "1", "--free-position", "--margin", "10", "--out", "d.npz"],
         "the canvas is too small for the crop"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    import re

    code, _, stderr = _run(capsys, argv)
    assert code == 2
    assert re.search(message, stderr), stderr
    assert "Traceback" not in stderr
