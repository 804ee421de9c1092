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
    import matplotlib.pyplot as plt

    assert plt.imread(out).shape[:2] == (32, 32)  # pixel for pixel, no figure margins


@pytest.mark.slow
def test_sheet_writes_a_png(tmp_path, capsys):
    out = tmp_path / "sheet.png"
    code, stdout, _ = _run(
        capsys, ["shapes", "sheet", "--out", str(out), "--classes", "cube,star", "--image-size", "32", "--json"]
    )
    assert code == 0 and out.stat().st_size > 1000
    assert json.loads(stdout)["rows"] == ["cube", "star"]
    code, stdout, _ = _run(capsys, ["shapes", "sheet", "--out", str(out), "--classes", "cube", "--n-random", "0"])
    assert code == 0 and stdout.startswith("Wrote a contact sheet of 1 class x 16 columns (64 px images)")


def test_sheet_help_states_the_size_it_writes(capsys):
    from fitaudit.cli import build_parser

    assert build_parser().parse_args(["shapes", "sheet", "--out", "s.png"]).image_size == 64
    code, stdout, _ = _run(capsys, ["shapes", "sheet", "--help"])
    assert code == 0 and "image side in pixels (default 64)" in " ".join(stdout.split())


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


@pytest.mark.slow
def test_train_reports_held_out_accuracy(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    code, stdout, _ = _run(
        capsys,
        ["shapes", "train", "--architecture", "shapes_alexnet", "--width", "4", "--classes", "sphere,cube",
         "--objects-per-class", "2", "--renders-per-object", "2", "--validation-objects-per-class", "1",
         "--test-objects-per-class", "1", "--eval-renders-per-object", "2", "--epochs", "1",
         "--out", str(tmp_path / "run"), "--json", "--threads", str(before + 1)],
    )
    assert code == 0
    assert torch.get_num_threads() == before  # --threads holds for the command only: the count is given back
    summary = json.loads(stdout)  # progress and per-epoch lines go to stderr
    assert 0.0 <= summary["test_accuracy"] <= 1.0 and summary["test_images"] == 4
    assert (tmp_path / "run" / "model" / "weights.safetensors").is_file()
    config = json.loads((tmp_path / "run" / "model" / "config.json").read_text())
    assert config["metadata"]["data_fingerprint"] == summary["data_fingerprint"]
    assert config["metadata"]["data_seed"] == 0 and config["metadata"]["seed"] == 0


def _train_free_position(capsys, folder, *extra):
    code, stdout, err = _run(
        capsys,
        ["shapes", "train", "--architecture", "shapes_alexnet", "--width", "4", "--classes", "sphere,cube",
         "--objects-per-class", "3", "--renders-per-object", "2", "--validation-objects-per-class", "1",
         "--test-objects-per-class", "2", "--eval-renders-per-object", "2", "--epochs", "1",
         "--free-position", "--margin", "3", "--wrap", "--out", str(folder), "--json", "--quiet", *extra],
    )
    assert code == 0, err
    return json.loads(stdout)


@pytest.mark.slow
def test_free_position_training_feeds_the_overfit_command(tmp_path, capsys):
    run = tmp_path / "run"
    summary = _train_free_position(capsys, run)
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

    # another training seed on the same data: one more run of the same training, for the N-model test
    again = _train_free_position(capsys, tmp_path / "run2", "--seed", "1")
    assert again["data_fingerprint"] == summary["data_fingerprint"] and again["seed"] == 1
    with np.load(summary["train_data"]) as first, np.load(again["train_data"]) as second:
        assert np.array_equal(first["x"], second["x"])
    code, stdout, _ = _run(
        capsys,
        ["overfit", "--model", str(run / "model"), "--models", str(tmp_path / "run2" / "model"),
         "--data", summary["test_data"], "--eps", "1", "--margin", "3", "--quiet", "--json"],
    )
    assert code == 0 and json.loads(stdout)["n_models"] == 2 and json.loads(stdout)["notes"] == []
    # another data seed: other training data, which the N-model test refuses
    other = _train_free_position(capsys, tmp_path / "run3", "--data-seed", "1")
    assert other["data_fingerprint"] != summary["data_fingerprint"]
    code, _, err = _run(
        capsys,
        ["overfit", "--model", str(run / "model"), "--models", str(tmp_path / "run3" / "model"),
         "--data", summary["test_data"], "--eps", "1", "--margin", "3", "--quiet"],
    )
    assert code == 2 and "trained on different data" in err and "--data-seed" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["shapes", "render", "--class", "teapot", "--out", "x.png"], "unknown class 'teapot'"),
        (["shapes", "render", "--class", "cube", "--factor", "camera_elevation=100", "--out", "x.png"],
         "factor `camera_elevation` must be in \\[-90, 90\\]"),
        (["shapes", "render", "--class", "cube", "--factor", "zoom", "--out", "x.png"], "`--factor` must look like NAME=VALUE"),
        (["shapes", "render", "--class", "cube", "--image-size", "0", "--out", "x.png"], "`--image-size` must be a positive integer"),
        (["shapes", "dataset", "--objects-per-class", "1", "--range", "camera_elevation=-100,0", "--out", "d.npz"],
         "`camera_elevation` range must satisfy"),
        (["shapes", "dataset", "--objects-per-class", "1", "--free-position", "--margin", "10", "--out", "d.npz"],
         "the canvas is too small for the crop"),
        (["shapes", "dataset", "--objects-per-class", "1", "--wrap", "--out", "d.npz"],
         "`--wrap` only applies to free-position canvases: add --free-position"),
        (["shapes", "train", "--margin", "6", "--out", "run"], "`--margin` only applies to free-position canvases"),
        (["shapes", "train", "--out", __file__], "`--out` must be a folder; .* is an existing file"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    import re

    code, _, stderr = _run(capsys, argv)
    assert code == 2
    assert re.search(message, stderr), stderr
    assert "Traceback" not in stderr
