"""Trust comes from the caller only: a file never grants itself --trust-code, and paths stay in their folder.

An adversarial trial found that a population folder whose ``population.json``
said ``"trust_code": true`` made ``pgdl score``, ``rank``, ``leaderboard`` and
``audit --task`` run a model's ``net.py`` without ``--trust-code`` (those
commands had no such option). Each test plants a ``net.py`` that writes a
marker file when imported and checks that it runs only when the caller asks.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.cli import main
from fitaudit.data.io import save_npz
from fitaudit.options import RunOptions

torch = pytest.importorskip("torch")
safetensors_torch = pytest.importorskip("safetensors.torch")

N_IN = 3 * 4 * 4


def assert_one_line_error(err: str, fragment: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("fitaudit: error: ") and fragment in lines[0], lines[0]


def planted_model(folder: Path, marker: Path, seed: int, file: str = "net.py") -> Path:
    """A torch folder whose config names ``file``: importing it writes ``marker`` (then defines a linear net)."""
    folder.mkdir(parents=True)
    code = (f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\nimport torch\n\n\n"
            "class Net(torch.nn.Sequential):\n    def __init__(self, n_classes=2):\n"
            f"        super().__init__(torch.nn.Flatten(), torch.nn.Linear({N_IN}, n_classes))\n")
    (folder / "net.py").write_text(code)
    (folder / "config.json").write_text(json.dumps({"architecture": {"file": file, "class": "Net"},
                                                    "kwargs": {"n_classes": 2}}))
    torch.manual_seed(seed)
    safetensors_torch.save_model(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(N_IN, 2)),
                                 str(folder / "weights.safetensors"))
    return folder


def planted_population(root: Path, marker: Path, *, manifest_trust: bool = True) -> Path:
    """A population folder of two planted models whose manifest claims ``"trust_code": true``."""
    pop = root / "pop"
    rng = np.random.default_rng(0)
    save_npz(pop / "train.npz", rng.random((12, 3, 4, 4)).astype(np.float32), np.arange(12) % 2)
    models = {}
    for i in range(2):
        planted_model(pop / "models" / f"m{i}", marker, seed=i)
        models[f"m{i}"] = {"format": "torch", "path": f"models/m{i}", "hparams": {"width": 4 * (i + 1)},
                           "metrics": {"train_acc": 1.0, "test_acc": 0.5 + 0.25 * i}}
    manifest = {"version": 1, "models": models, "possible_values": {"width": [4, 8]}, "disagreements": []}
    if manifest_trust:
        manifest["trust_code"] = True
    (pop / "population.json").write_text(json.dumps(manifest))
    return pop


@pytest.fixture
def planted(tmp_path: Path) -> dict[str, Path]:
    marker = tmp_path / "MARKER"
    from fitaudit.models import load_model, save_torch_model
    from fitaudit.models.architectures import build_architecture

    mlp = {"architecture": "mlp", "kwargs": {"in_features": N_IN, "hidden_sizes": [4], "n_classes": 2}}
    torch.manual_seed(3)
    model = save_torch_model(build_architecture(mlp), mlp, tmp_path / "audited")
    pool = np.random.default_rng(1).normal(size=(400, N_IN)).astype(np.float32)
    predicted = load_model(model).predict(pool)
    rows = np.concatenate([np.flatnonzero(predicted == c)[:4] for c in (0, 1)])  # 4 of each, as the model says
    data = save_npz(tmp_path / "data.npz", pool[rows], predicted[rows])
    return {"marker": marker, "pop": planted_population(tmp_path, marker), "data": data, "model": model,
            "out": tmp_path / "out"}


def _commands(p: dict[str, Path]) -> dict[str, list[str]]:
    task = str(p["pop"])
    return {
        "pgdl score": ["pgdl", "score", "--task", task, "--measure", "weight_norm", "--quiet"],
        "pgdl rank": ["pgdl", "rank", "--task", task, "--measure", "weight_norm", "--quiet"],
        "pgdl leaderboard": ["pgdl", "leaderboard", "--task", task, "--measure", "weight_norm", "--quiet",
                             "--out", str(p["out"] / "board")],
        "audit --task": ["audit", "--model", str(p["model"]), "--data", str(p["data"]), "--task", task,
                         "--instruments", "pgdl", "--out", str(p["out"] / "audit"), "--quiet"],
    }


@pytest.mark.parametrize("command", ["pgdl score", "pgdl rank", "pgdl leaderboard", "audit --task"])
@pytest.mark.slow
def test_a_population_file_cannot_grant_itself_trust(planted, command, capsys):
    argv = _commands(planted)[command]
    assert main(argv) == 2
    assert_one_line_error(capsys.readouterr().err, "pass --trust-code")
    assert not planted["marker"].exists(), "the planted net.py ran without --trust-code"
    assert main([*argv, "--trust-code"]) == 0  # the caller's option is the one grant
    assert planted["marker"].read_text() == "ran"


def test_the_api_takes_trust_from_its_argument_only(planted):
    from fitaudit.pgdl import load_task
    from fitaudit.pgdl.harness import score_task

    with pytest.raises(InputError, match="pass --trust-code"):
        score_task(planted["pop"], ["weight_norm"], options=RunOptions(progress=False))
    with pytest.raises(InputError, match="pass --trust-code"):
        load_task(planted["pop"])
    assert not planted["marker"].exists()
    scores = score_task(load_task(planted["pop"], trust_code=True), ["weight_norm"], options=RunOptions(progress=False))
    assert planted["marker"].exists() and all(v is not None for v in scores.score("weight_norm").values.values())


def test_import_writes_no_trust_into_the_population(planted, tmp_path):
    from fitaudit.pgdl.population_import import import_population

    table = tmp_path / "runs.csv"
    table.write_text("model,width,train_acc,test_acc\nm0,4,1,0.5\nm1,8,1,0.75\n")
    pop = import_population(planted["pop"] / "models", table, planted["pop"] / "train.npz", tmp_path / "imported",
                            trust_code=True)
    assert "trust_code" not in json.loads((pop.directory / "population.json").read_text())
    planted["marker"].unlink()
    assert main(["pgdl", "score", "--task", str(pop.directory), "--measure", "weight_norm", "--quiet"]) == 2
    assert not planted["marker"].exists()


@pytest.mark.parametrize("path", ["../outside", "/tmp", "models/../../outside"])
def test_manifest_paths_stay_inside_the_population(planted, path, capsys):
    outside = planted["pop"].parent / "outside"
    planted_model(outside, planted["marker"], seed=5)
    manifest = json.loads((planted["pop"] / "population.json").read_text())
    manifest["models"]["m0"]["path"] = path
    (planted["pop"] / "population.json").write_text(json.dumps(manifest))
    assert main(["pgdl", "score", "--task", str(planted["pop"]), "--measure", "weight_norm", "--trust-code",
                 "--quiet"]) == 2
    assert_one_line_error(capsys.readouterr().err, "which leaves the population folder")
    assert not planted["marker"].exists()


def test_a_symlinked_model_leaving_the_population_is_refused(planted, capsys):
    outside = planted_model(planted["pop"].parent / "elsewhere", planted["marker"], seed=6)
    link = planted["pop"] / "models" / "link"
    link.symlink_to(outside, target_is_directory=True)
    manifest = json.loads((planted["pop"] / "population.json").read_text())
    manifest["models"]["m0"]["path"] = "models/link"
    (planted["pop"] / "population.json").write_text(json.dumps(manifest))
    assert main(["pgdl", "rank", "--task", str(planted["pop"]), "--measure", "weight_norm", "--trust-code",
                 "--quiet"]) == 2
    assert_one_line_error(capsys.readouterr().err, "which leaves the population folder")
    assert not planted["marker"].exists()


@pytest.mark.parametrize("file", ["../net.py", "sub/../../net.py"])
def test_an_architecture_file_outside_the_model_folder_is_refused(tmp_path, file, capsys):
    """Outside the folder the file escaped the model's fingerprint (a folder's files): refused even when trusted."""
    marker = tmp_path / "MARKER"
    model = planted_model(tmp_path / "m", marker, seed=0, file=file)
    (tmp_path / "net.py").write_text((model / "net.py").read_text())
    data = save_npz(tmp_path / "d.npz", np.random.default_rng(0).random((6, 3, 4, 4)).astype(np.float32),
                    np.arange(6) % 2)
    for argv in (["inspect", "--model", str(model), "--trust-code"],
                 ["audit", "--model", str(model), "--data", str(data), "--trust-code", "--quiet",
                  "--out", str(tmp_path / "out")]):
        assert main(argv) == 2
        assert_one_line_error(capsys.readouterr().err, "which is outside the model folder")
    assert not marker.exists()
    from fitaudit.models import load_model

    with pytest.raises(InputError, match="outside the model folder"):
        load_model(model, trust_code=True)
    assert not marker.exists()


def test_an_absolute_architecture_file_is_refused(tmp_path):
    from fitaudit.models import load_model

    marker = tmp_path / "MARKER"
    model = planted_model(tmp_path / "m", marker, seed=0, file=str(tmp_path / "m" / "net.py"))
    with pytest.raises(InputError, match="outside the model folder"):
        load_model(model, trust_code=True)
    assert not marker.exists()


def test_every_command_that_loads_models_has_trust_code():
    """Each subcommand taking --model, --models or --task takes --trust-code (the option its refusal names).

    Not ``pgdl zoo build`` (no models in).
    """
    import argparse

    from fitaudit.cli import build_parser

    def walk(parser: argparse.ArgumentParser, name: str):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, child in action.choices.items():
                    yield from walk(child, f"{name} {sub}".strip())
        yield name, {o for a in parser._actions for o in a.option_strings}

    checked = []
    for name, options in walk(build_parser(), ""):
        if options & {"--model", "--models", "--task"} and name != "pgdl zoo build":
            assert "--trust-code" in options, name
            checked.append(name)
    assert {"pgdl score", "pgdl rank", "pgdl leaderboard", "audit", "pgdl import", "pmv"} <= set(checked)
