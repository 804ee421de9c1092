"""``fitaudit reproduce overfit-imagefolder --quick``: image folders, ONNX, the command line, resumable."""

from __future__ import annotations

import json

import pytest

from fitaudit.cli import main

#: every test here takes seconds (README.md: the fast command leaves them out)
pytestmark = pytest.mark.slow

pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
pytest.importorskip("PIL")


def test_quick_reproduction_runs_through_files_and_the_command_line(tmp_path, capsys):
    argv = ["reproduce", "overfit-imagefolder", "--quick", "--out", str(tmp_path), "--quiet"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    for suffix in ("json", "md", "png"):
        assert (tmp_path / f"overfit-imagefolder-quick.{suffix}").stat().st_size > 0
    result = json.loads((tmp_path / "overfit-imagefolder-quick.json").read_text())
    assert result["pipeline"] == {"resize": 22, "crop": 16, "mean": [0.0] * 3, "std": [1.0] * 3, "channels": 3, "margin": 3}
    assert result["eps"] == 1 and result["render_size"] == 44
    assert result["n_images"] == {"train": 128, "unseen": 128, "jpeg": 128, "png": 128}
    data = next((tmp_path / "checkpoints").glob("data-*"))
    assert len(list((data / "train").rglob("*.jpg"))) == 64 and len(list((data / "train").rglob("*.png"))) == 64
    for split in ("train", "unseen"):
        run = result["runs"][split]
        assert run["m"] == 128 and 0 <= run["pvalue"] <= 1 and run["reject"] == (run["pvalue"] < 0.05)
        assert run["command"].startswith("fitaudit overfit --model ") and "--images" in run["command"]
        assert 0 < run["evaluations_per_example"] <= 25  # (4 eps + 1)^2
    assert "training folder" in out and "unseen" in out
    # a rerun resumes: the image folders, the CNN, the ONNX file and every batch's terms are reused
    files = sorted(p for p in (tmp_path / "checkpoints").rglob("*") if p.is_file())
    assert main(argv) == 0
    again = json.loads((tmp_path / "overfit-imagefolder-quick.json").read_text())
    assert again["runs"]["train"]["pvalue"] == result["runs"]["train"]["pvalue"]
    assert again["train_accuracy"] == result["train_accuracy"]
    assert sorted(p for p in (tmp_path / "checkpoints").rglob("*") if p.is_file()) == files
