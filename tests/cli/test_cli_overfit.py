"""``fitaudit overfit``: end to end on a saved torch model and canvases in an .npz file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from fitaudit.cli import main

torch = pytest.importorskip("torch")

SIDE, MARGIN, N_CLASSES = 6, 3, 3


def save_mlp(folder: Path, seed: int) -> Path:
    from fitaudit.models import save_torch_model
    from fitaudit.models.architectures import build_architecture

    config = {
        "architecture": "mlp",
        "kwargs": {"in_features": 2 * SIDE * SIDE, "hidden_sizes": [8], "n_classes": N_CLASSES},
        "n_classes": N_CLASSES,
    }
    torch.manual_seed(seed)
    return save_torch_model(build_architecture(config), config, folder)


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, Path]:
    rng = np.random.default_rng(0)
    canvases = rng.random((40, 2, SIDE + 2 * MARGIN, SIDE + 2 * MARGIN)).astype(np.float32)
    labels = rng.integers(0, N_CLASSES, size=40)
    np.savez(tmp_path / "data.npz", x=canvases, y=labels)
    np.savez(tmp_path / "bright.npz", x=canvases * 2, y=labels)
    np.savez(tmp_path / "labels.npz", x=canvases, y=labels + 1)
    return {
        "data": tmp_path / "data.npz",
        "bright": tmp_path / "bright.npz",
        "labels": tmp_path / "labels.npz",
        "model": save_mlp(tmp_path / "m1", 0),
        "model2": save_mlp(tmp_path / "m2", 1),
    }


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_overfit_json(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "overfit", "--model", files["model"], "--data", files["data"], "--eps", 1,
        "--margin", MARGIN, "--variant", "strongest", "--json", "--quiet",
    )
    assert code == 0
    result = json.loads(out)
    assert 0 <= result["pvalue"] <= 1 and result["pvalue"] == result["test"]["pairwise"]["pvalue"]
    assert result["test"]["U"] == 1.5 and result["m"] == 40 and result["n_models"] == 1
    assert "(G3)" in result["warning"] and "MNIST" in result["warning"]
    run_info = result["runs"][0]
    assert 0 < run_info["evaluations_per_example"] <= 25  # (4 eps + 1)^2 <= (6 eps + 1)^2 = 49
    assert run_info["evaluations_per_example"] == result["test"]["evaluations"] / 40
    assert run_info["ci_pvalue"] == result["test"]["ci"]["pvalue"]
    # the random labels make the model wrong on about 2/3 of the images
    assert 0.3 < run_info["error_rate"] < 1
    assert result["reject"] == (result["pvalue"] < 0.05)


def test_overfit_n_model_and_text_output(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys, "overfit", "--model", files["model"], "--models", files["model2"], "--data",
        files["data"], "--eps", 1, "--margin", 4, "--variant", "random2", "--quiet",
    )
    # the canvases have a margin of 3: with --margin 4 the crops are 4x4 and the mlp refuses them
    assert code == 2 and "`--margin` 4 makes the images 4x4 crops" in err
    code, out, _ = run(
        capsys, "overfit", "--model", files["model"], "--models", files["model2"], "--data",
        files["data"], "--eps", 1, "--margin", MARGIN, "--variant", "random2", "--quiet",
    )
    assert code == 0
    assert "OverfitCommandResult" in out and out.count("error rate") == 2
    code, out, _ = run(
        capsys, "overfit", "--model", files["model"], "--models", files["model2"], "--data",
        files["data"], "--eps", 1, "--margin", MARGIN, "--variant", "random2", "--quiet", "--json",
    )
    result = json.loads(out)
    # the N-model test of the core: p-value on the averaged terms, per-run p-values beside it
    assert result["n_models"] == 2 and result["test"]["n_models"] == 2
    assert result["pvalue"] == result["test"]["pvalue"] and result["test"]["U"] == 2.0
    assert [r["pvalue"] for r in result["runs"]] == [e["pvalue"] for e in result["test"]["per_model"]]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"--eps": 0}, "`eps` must be a positive integer"),
        ({"--margin": 2}, r"`margin` must be at least 3 \* eps = 3"),
        ({"--data": "bright"}, r"values in \[0, 1\]"),
        ({"--data": "labels"}, "holds label 3 but the model has 3 classes"),
        ({"--delta": 0.7}, "`--delta` must be in"),
    ],
)
def test_overfit_bad_input(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str], change: dict, message: str
) -> None:
    options = {"--model": files["model"], "--data": files["data"], "--eps": 1, "--margin": MARGIN}
    for key, value in change.items():
        options[key] = files[value] if value in ("bright", "labels") else value
    argv = ["overfit", "--quiet"] + [str(v) for pair in options.items() for v in pair]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert re.search(message, err), err


def test_reproduce_overfit_shapes_quick(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "reproduce", "overfit-shapes", "--quick", "--out", tmp_path, "--json", "--quiet"
    )
    assert code == 0
    result = json.loads(out)
    assert result["mode"] == "quick" and result["margin"] == 3 * result["eps"]
    assert result["layout"]["wrap"] and result["layout"]["margin"] == result["margin"]
    assert 0 <= result["train_accuracy"] <= 1 and 0 <= result["test_accuracy"] <= 1
    assert result["training"]["architecture"] == "shapes_alexnet"
    assert set(result["curves"]) == {"train", "test"}
    for name, per_variant in result["curves"].items():
        assert set(per_variant) == {"strongest", "nearest", "random", "random2"}
        for entry in per_variant.values():
            assert len(entry["pairwise"]) == len(result["sizes"])
            assert all(0 <= p <= 1 for p in entry["pairwise"] + entry["ci"])
            # the AEG's clean losses are the CNN's errors on the centre crops
            assert entry["error_rate"] == pytest.approx(1 - result[f"{name}_accuracy"])
    assert (tmp_path / "overfit-shapes-quick.png").stat().st_size > 1000
    assert json.loads((tmp_path / "overfit-shapes-quick.json").read_text())["mode"] == "quick"
    # run again: the CNN and the AEG terms come from the checkpoints, the numbers are the same
    code, out, _ = run(
        capsys, "reproduce", "overfit-shapes", "--quick", "--out", tmp_path, "--json", "--quiet"
    )
    again = json.loads(out)
    assert code == 0 and again["curves"] == result["curves"]
    assert again["train_accuracy"] == result["train_accuracy"]
