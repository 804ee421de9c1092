"""Sizes are bounded before work starts (issue 30, item 5): a resize recorded in a model file, shapes dataset
counts, an .npz header claiming a huge array and a config asking for a huge layer are refused in one line
naming the option or file, from the headers and options alone (nothing is allocated first)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.cli import main

torch = pytest.importorskip("torch")


def assert_one_line_error(err: str, *fragments: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("fitaudit: error: ") and "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_a_huge_resize_is_refused_before_decoding(tmp_path, capsys):
    from fitaudit.data.pipeline import EvalPipeline
    from fitaudit.models import save_torch_model
    from fitaudit.models.architectures import build_architecture

    with pytest.raises(InputError, match=r"`--resize` 20000 .* GiB"):
        EvalPipeline(resize=20000, crop=16)
    EvalPipeline(resize=2048, crop=1024)  # large medical or satellite crops still pass
    config = {"architecture": "mlp", "kwargs": {"in_features": 3 * 16 * 16, "hidden_sizes": [], "n_classes": 2},
              "classes": ["a", "b"], "pipeline": {"resize": 20000, "crop": 16}}
    model = save_torch_model(build_architecture(config), config, tmp_path / "model")
    from PIL import Image

    for name in ("a", "b"):
        (tmp_path / "imgs" / name).mkdir(parents=True)
        Image.new("RGB", (8, 8)).save(tmp_path / "imgs" / name / "0.png")
    assert main(["audit", "--model", str(model), "--images", str(tmp_path / "imgs"), "--out", str(tmp_path / "o"),
                 "--quiet"]) == 2
    assert_one_line_error(capsys.readouterr().err, "`--resize` 20000")


def test_huge_shapes_dataset_counts_are_refused_at_once(tmp_path, capsys):
    argv = ["shapes", "dataset", "--objects-per-class", "1000000000", "--renders-per-object", "1000",
            "--out", str(tmp_path / "d.npz"), "--quiet"]
    assert main(argv) == 2
    assert_one_line_error(capsys.readouterr().err, "--objects-per-class", "--renders-per-object")
    assert not (tmp_path / "d.npz").exists()
    assert main(["shapes", "train", "--objects-per-class", "1000000000", "--out", str(tmp_path / "run"), "--quiet"]) == 2
    assert_one_line_error(capsys.readouterr().err, "--objects-per-class", "images of 3 x")


def _npz_with_header(path: Path, shape: tuple[int, ...]) -> Path:
    """A small .npz whose x.npy header claims ``shape`` (float32) but holds a few bytes; y is real."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": shape})
    labels = io.BytesIO()
    np.save(labels, np.zeros(4, dtype=np.int64))
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("x.npy", header.getvalue() + b"\0" * 6000)
        archive.writestr("y.npy", labels.getvalue())
    return path


def test_an_npz_header_claiming_a_huge_array_is_refused(tmp_path, capsys):
    from fitaudit.data.io import load_npz

    path = _npz_with_header(tmp_path / "huge.npz", (10**11, 64))
    assert path.stat().st_size < 10_000
    with pytest.raises(InputError, match=r"`--data`: .*huge.npz.* array 'x' .*\(100000000000, 64\)"):
        load_npz(path, name="--data")
    assert main(["leakage", "--data", str(path), "--train-data", str(path), "--quiet"]) == 2
    assert_one_line_error(capsys.readouterr().err, "`--data`", "(100000000000, 64)")
    short = _npz_with_header(tmp_path / "short.npz", (4, 6400))  # claims 100 KB, holds 6 KB
    with pytest.raises(InputError, match="array .x. claims shape \\(4, 6400\\).* truncated"):
        load_npz(short, name="--data")


def test_a_config_asking_for_a_huge_layer_is_refused_before_building(tmp_path, capsys):
    from fitaudit.models import load_model

    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(
        {"architecture": "mlp", "kwargs": {"in_features": 200000, "hidden_sizes": [200000], "n_classes": 2}}))
    (folder / "weights.safetensors").write_bytes(b"")
    with pytest.raises(InputError, match=r"config.json.*parameters"):
        load_model(folder, name="--model")
    assert main(["inspect", "--model", str(folder)]) == 2
    assert_one_line_error(capsys.readouterr().err, "`--model`", "parameters")
