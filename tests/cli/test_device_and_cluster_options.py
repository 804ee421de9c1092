"""``--device`` on every command that runs a model and ``--dask-scheduler`` on every command with ``--n-jobs``:
one shared option each, checked before any work, and really handed to the library."""

from __future__ import annotations

import argparse
import contextlib

import pytest

from fitaudit.cli import build_parser, main

torch = pytest.importorskip("torch")

#: every command that runs a model, with the least that gets it past the parser
RUNS_A_MODEL = {
    "audit": ["audit", "--model", "m.onnx", "--data", "d.npz"],
    "overfit": ["overfit", "--model", "m.onnx", "--data", "d.npz"],
    "examine": ["examine", "--model", "m.onnx"],
    "inspect": ["inspect", "--model", "m.onnx", "--data", "d.npz"],
    "leakage": ["leakage", "--data", "d.npz", "--train-data", "t.npz"],
    "pgdl import": ["pgdl", "import", "--models", "m", "--table", "t.csv", "--train-data", "d.npz", "--out", "p"],
    "pgdl score": ["pgdl", "score", "--task", "t", "--measure", "vc_dim"],
    "pgdl leaderboard": ["pgdl", "leaderboard", "--task", "t"],
    "pgdl rank": ["pgdl", "rank", "--task", "t"],
    "pgdl zoo build": ["pgdl", "zoo", "build", "--out", "z"],
    "shapes train": ["shapes", "train", "--out", "s"],
    "demo": ["demo", "--out", "d"],
    **{f"reproduce {name}": ["reproduce", name, "--quick", "--out", "r"] for name in (
        "overfit-shapes", "overfit-imagefolder", "examiner-table", "examiner-renders", "examiner-planted",
        "examiner-variants", "examiner-images")},
}

#: the commands that run no torch model, and why (every other command must take --device)
NO_MODEL = {
    "report": "reads a saved result",
    "measures list": "lists the measures",
    "pmv": "fits scikit-learn learners only (the catalogue's, or a .skops file, which admits scikit-learn types only)",
    "shapes sheet": "renders images", "shapes render": "renders images", "shapes dataset": "renders images",
    "reproduce overfit-synthetic": "trains numpy logistic models (the library refuses another device than the CPU)",
    **{f"reproduce pmv-{name}": "fits scikit-learn learners only (the library refuses another device than the CPU)"
       for name in ("comparison", "tree-depth", "mlp-width")},
}


def _leaves(parser, path=()):
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.update(_leaves(sub, (*path, name)))
    if not found and path:
        found[" ".join(path)] = parser
    return found


def test_every_command_that_runs_a_torch_model_takes_device():
    leaves = _leaves(build_parser())
    takes = {name for name, parser in leaves.items() if any("--device" in a.option_strings for a in parser._actions)}
    assert takes == set(RUNS_A_MODEL)
    assert set(leaves) == takes | set(NO_MODEL), "classify the new command here"

#: every command with --n-jobs
PARALLEL = {
    "audit": ["audit", "--model", "m.onnx", "--data", "d.npz"],
    "demo": ["demo"],
    "overfit": ["overfit", "--model", "m.onnx", "--images", "imgs"],
    "examine": ["examine", "--model", "m.onnx"],
    "pmv": ["pmv", "--dataset", "breast_cancer", "--estimator", "decision_tree"],
    "pgdl score": ["pgdl", "score", "--task", "t", "--measure", "vc_dim"],
    "pgdl leaderboard": ["pgdl", "leaderboard", "--task", "t"],
    "pgdl zoo build": ["pgdl", "zoo", "build", "--out", "z"],
    "pgdl rank": ["pgdl", "rank", "--task", "t"],
}


@pytest.mark.parametrize("device, words", [
    ("tpu", "`--device` must name a torch device such as 'cpu' or 'cuda:0'; got 'tpu'."),
    ("cuda", "`--device` is 'cuda' but torch sees no CUDA device on this machine; use --device 'cpu'."),
    ("cuda:7", "`--device` is 'cuda:7' but "),
])
@pytest.mark.parametrize("command", sorted(RUNS_A_MODEL))
def test_a_wrong_device_is_one_line_before_any_work(command, device, words, capsys, tmp_path, monkeypatch):
    if device.startswith("cuda") and torch.cuda.device_count() > 7:
        pytest.skip("this machine has that device")
    monkeypatch.chdir(tmp_path)  # the files named do not exist: the device is refused first
    assert main([*RUNS_A_MODEL[command], "--device", device, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"fitaudit: error: {words}") and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("command", sorted(PARALLEL))
def test_every_command_with_n_jobs_takes_a_dask_scheduler(command):
    args = build_parser().parse_args([*PARALLEL[command], "--n-jobs", "2", "--dask-scheduler", "tcp://10.0.0.5:8786"])
    assert args.dask_scheduler == "tcp://10.0.0.5:8786"


def test_the_handler_runs_inside_the_cluster_unless_the_library_connects(monkeypatch):
    from fitaudit import parallel as runner
    from fitaudit.cli._common import run_handler

    entered: list[str] = []

    @contextlib.contextmanager
    def recording(address):
        entered.append(address)
        yield None

    monkeypatch.setattr(runner, "compute_backend", recording)
    inside = run_handler(lambda a: list(entered), argparse.Namespace(dask_scheduler="tcp://h:1"))
    assert inside == ["tcp://h:1"]
    assert run_handler(lambda a: "ran", argparse.Namespace(dask_scheduler="tcp://h:2", cluster_in_library=True)) == "ran"
    assert run_handler(lambda a: "ran", argparse.Namespace()) == "ran" and entered == ["tcp://h:1"]


def test_an_unreachable_scheduler_is_one_line_naming_the_option(capsys):
    from fitaudit import parallel as runner

    with pytest.raises(Exception, match="`dask_scheduler`"):
        with runner.compute_backend(3):
            pass
    code = main(["pmv", "--dataset", "breast_cancer", "--estimator", "decision_tree", "--dask-scheduler", "notaurl"])
    assert code == 2 and "--dask-scheduler" in capsys.readouterr().err


@pytest.mark.parametrize("command, module, function", [
    (["pgdl", "score", "--measure", "weight_norm"], "fitaudit.pgdl.harness", "score_task"),
    (["pgdl", "leaderboard"], "fitaudit.pgdl.leaderboard", "leaderboard"),
    (["pgdl", "rank"], "fitaudit.pgdl.leaderboard", "rank_models"),
    (["pgdl", "zoo", "build", "--out", "z"], "fitaudit.pgdl.zoo_task", "build_zoo_task"),
    (["shapes", "train", "--out", "s", "--objects-per-class", "1", "--renders-per-object", "1",
      "--validation-objects-per-class", "1", "--test-objects-per-class", "1", "--eval-renders-per-object", "1",
      "--image-size", "16"], "fitaudit.models.training", "train_classifier"),
    (["demo", "--out", "d"], "fitaudit.demo", "run_demo"),
])
def test_the_commands_hand_the_device_to_the_library(command, module, function, monkeypatch, tmp_path,
                                                          tiny_pgdl_task):
    import importlib

    from fitaudit.cli import _common

    class Handed(Exception):
        pass

    def record(*args, device="cpu", options=None, **kwargs):
        raise Handed(device if options is None else options.device)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(_common, "check_device", lambda device, option="--device": device)  # no such GPU here
    monkeypatch.setattr(importlib.import_module(module), function, record)
    task = ["--task", str(tiny_pgdl_task)] if command[1] in ("score", "leaderboard", "rank") else []
    args = build_parser().parse_args([*command, *task, "--device", "cuda:1", "--quiet"])
    with pytest.raises(Handed, match="cuda:1"):
        args.handler(args)


@pytest.mark.parametrize("name", sorted(c.split()[1] for c in RUNS_A_MODEL if c.startswith("reproduce ")))
def test_reproduce_hands_the_device_to_its_experiment(name, monkeypatch, tmp_path):
    from fitaudit.experiments.catalogue import FUNCTIONS

    class Handed(Exception):
        pass

    def record(*args, device="cpu", **kwargs):
        raise Handed(device)

    monkeypatch.setitem(FUNCTIONS, name, record)  # the handler runs after the options' checks: no GPU is needed
    args = build_parser().parse_args(["reproduce", name, "--quick", "--out", str(tmp_path), "--device", "cuda:1"])
    with pytest.raises(Handed, match="cuda:1"):
        args.handler(args)


@pytest.mark.slow
def test_the_audit_hands_the_device_to_the_model_and_the_image_transforms(tmp_path, monkeypatch, capsys):
    """The device reaches the torch adapter and the examiner's image transforms (recorded, then run on the CPU)."""
    import numpy as np
    from PIL import Image

    from fitaudit.cli import _common
    from fitaudit.examine import scenarios
    from fitaudit.models import save_torch_model, torch_adapter
    from fitaudit.models.architectures import build_architecture

    config = {"architecture": "linear", "kwargs": {"in_features": 3 * 8 * 8, "n_classes": 2}, "n_classes": 2,
              "classes": ["a", "b"], "pipeline": {"resize": 8, "crop": 8}}
    torch.manual_seed(0)
    save_torch_model(build_architecture(config), config, tmp_path / "model")
    rng = np.random.default_rng(0)
    for name in ("a", "b"):
        (tmp_path / "imgs" / name).mkdir(parents=True)
        for i in range(3):
            Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)).save(tmp_path / "imgs" / name / f"{i}.png")
    seen: dict[str, list[str]] = {"adapter": [], "transforms": []}
    resolve, scenario = torch_adapter.resolve_device, scenarios.image_scenario

    def record_adapter(device, name="device"):
        seen["adapter"].append(str(device))
        return resolve("cpu", name)

    def record_transforms(*args, device="cpu", **kwargs):
        seen["transforms"].append(device)
        return scenario(*args, device="cpu", **kwargs)

    monkeypatch.setattr(_common, "check_device", lambda device, option="--device": device)  # no such GPU here
    monkeypatch.setattr(torch_adapter, "resolve_device", record_adapter)
    monkeypatch.setattr(scenarios, "image_scenario", record_transforms)
    code = main(["audit", "--model", str(tmp_path / "model"), "--images", str(tmp_path / "imgs"), "--instruments",
                 "examine", "--examine-steps", "2", "--out", str(tmp_path / "out"), "--device", "cuda:3", "--quiet",
                 "--json"])
    assert code == 0, capsys.readouterr().err
    assert seen["adapter"] and set(seen["adapter"]) == {"cuda:3"}
    assert seen["transforms"] == ["cuda:3"]
