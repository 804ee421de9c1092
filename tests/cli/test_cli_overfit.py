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
        "folder": tmp_path,
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
    verdict = out.splitlines()[0]
    assert verdict.startswith(("Rejected: the 2 runs (N-model test)", "Not rejected: no evidence that the 2 runs"))
    assert str(files["model"]) in out and str(files["model2"]) in out and "pairwise p" in out
    assert "OverfitCommandResult(" not in out and "{" not in out
    # the runs' files do not record their training data: said, not silently assumed
    assert "Note: could not check that the runs share their training data" in out
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
        ({"--eps": 0}, "`--eps` must be a positive integer"),
        ({"--eps": 2, "--margin": 5}, r"`--margin` must be at least 3 \* `--eps` = 6 spare pixels per side; got 5 \(use --eps 1 "),
        ({"--margin": 0}, r"got 0 \(the canvases need at least 3 spare pixels per side even for --eps 1\)"),
        ({"--data": "folder"}, r"`--data` must be a file; .* is a folder"),
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
        options[key] = files[value] if value in ("bright", "labels", "folder") else value
    argv = ["overfit", "--quiet"] + [str(v) for pair in options.items() for v in pair]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert re.search(message, err), err


def test_trust_torchscript_is_an_option_of_overfit(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    script = files["folder"] / "net.pt"
    script.write_bytes(b"not a pickle")
    code, _, err = run(
        capsys, "overfit", "--model", script, "--data", files["data"], "--eps", 1, "--margin", MARGIN, "--quiet"
    )
    assert code == 2 and "(--trust-torchscript)" in err  # the option the message names exists here
    code, _, err = run(
        capsys, "overfit", "--model", script, "--data", files["data"], "--eps", 1, "--margin", MARGIN,
        "--trust-torchscript", "--quiet",
    )
    assert code == 2 and "is not a TorchScript archive" in err and "Traceback" not in err


def test_n_model_runs_must_share_their_training_data(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    import json as json_module

    for name, data in (("model", "aaaa"), ("model2", "bbbb")):
        config_path = files[name] / "config.json"
        config = json_module.loads(config_path.read_text())
        config["metadata"] = {"data_fingerprint": data}
        config_path.write_text(json_module.dumps(config))
    argv = ["overfit", "--model", files["model"], "--models", files["model2"], "--data", files["data"],
            "--eps", 1, "--margin", MARGIN, "--quiet"]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "trained on different data" in err and "(data aaaa)" in err and "(data bbbb)" in err
    config_path = files["model2"] / "config.json"
    config = json_module.loads(config_path.read_text())
    config["metadata"] = {"data_fingerprint": "aaaa"}
    config_path.write_text(json_module.dumps(config))
    code, out, _ = run(capsys, *argv, "--json")
    assert code == 0 and json_module.loads(out)["notes"] == []
