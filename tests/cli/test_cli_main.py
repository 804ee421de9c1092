"""The ``fitaudit`` command: help, version, exit codes, --json, help texts, ``inspect``."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import skops.io
from sklearn.linear_model import LogisticRegression

import fitaudit
from fitaudit import __version__
from fitaudit.cli import build_parser, main
from fitaudit.data.io import save_npz


def run_module(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fitaudit", *args], capture_output=True, text=True, timeout=120
    )


def assert_one_line_error(err: str, fragment: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("fitaudit: error: ") and fragment in lines[0]
    assert "Traceback" not in err


def test_version_and_help(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"fitaudit {__version__}"
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "usage: fitaudit" in out and "inspect" in out
    assert main([]) == 0
    assert "COMMAND" in capsys.readouterr().out


def test_bad_usage_exits_2_with_one_line(capsys):
    assert main(["--no-such-option"]) == 2
    assert_one_line_error(capsys.readouterr().err, "unrecognized arguments: --no-such-option")
    assert main(["no-such-command"]) == 2
    assert_one_line_error(capsys.readouterr().err, "invalid choice: 'no-such-command'")
    assert main(["inspect"]) == 2
    assert_one_line_error(capsys.readouterr().err, "the following arguments are required: --model")


def test_bad_input_exits_2_with_one_line(capsys, tmp_path):
    assert main(["inspect", "--model", str(tmp_path / "absent.onnx")]) == 2
    assert_one_line_error(capsys.readouterr().err, "`--model`: '")
    pickle_file = tmp_path / "model.pkl"
    pickle_file.write_bytes(b"\x80\x04N.")
    assert main(["inspect", "--model", str(pickle_file)]) == 2
    assert_one_line_error(capsys.readouterr().err, "never unpickles")


@pytest.fixture
def sklearn_files(tmp_path):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(50, 3))
    y = (x[:, 0] > 0).astype(int)
    model = LogisticRegression().fit(x, y)
    skops.io.dump(model, tmp_path / "model.skops")
    save_npz(tmp_path / "data.npz", x, y)
    return tmp_path, model, x, y


def test_inspect_json(capsys, sklearn_files):
    folder, model, x, y = sklearn_files
    args = ["inspect", "--model", str(folder / "model.skops"), "--data", str(folder / "data.npz")]
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["type"] == "InspectResult" and report["kind"] == "sklearn"
    assert report["n_classes"] == 2 and report["n_examples"] == 50
    assert report["accuracy"] == pytest.approx(model.score(x, y))
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{folder / 'model.skops'} loaded safely: a scikit-learn model with 2 classes (0, 1)")
    from scipy.stats import binomtest

    ci = binomtest(round(model.score(x, y) * 50), 50).proportion_ci(0.95, method="exact")
    assert report["accuracy_interval"] == pytest.approx([ci.low, ci.high])
    assert (f"Accuracy on the 50 examples of the data: {model.score(x, y):.4f} "
            f"(95% interval {ci.low:.4f}-{ci.high:.4f}, exact).") in out
    assert "InspectResult(" not in out and "{" not in out


def test_inspect_encodes_string_classes(capsys, tmp_path):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(40, 2))
    names = np.where(x[:, 1] > 0, "up", "down")
    model = LogisticRegression().fit(x, names)
    skops.io.dump(model, tmp_path / "model.skops")
    np.savez(tmp_path / "data.npz", x=x, y=names)
    assert main(["inspect", "--model", str(tmp_path / "model.skops"), "--data", str(tmp_path / "data.npz"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["classes"] == ["down", "up"]
    assert report["accuracy"] == pytest.approx(model.score(x, names))
    np.savez(tmp_path / "bad.npz", x=x, y=np.full(40, "left"))
    assert main(["inspect", "--model", str(tmp_path / "model.skops"), "--data", str(tmp_path / "bad.npz")]) == 2
    assert_one_line_error(capsys.readouterr().err, "`--data['y']` holds labels the model does not have: left; labels "
                                                   "are the classes the model was trained on: down, up")


def test_inspect_rejects_data_the_model_cannot_score(capsys, sklearn_files):
    folder, _, _, _ = sklearn_files
    save_npz(folder / "wide.npz", np.zeros((4, 5)), [0, 1, 0, 1])
    assert main(["inspect", "--model", str(folder / "model.skops"), "--data", str(folder / "wide.npz")]) == 2
    assert_one_line_error(capsys.readouterr().err, "`--data['x']`: the sklearn model failed on a batch of shape (4, 5)")
    save_npz(folder / "three.npz", np.zeros((3, 3)), [0, 1, 2])
    assert main(["inspect", "--model", str(folder / "model.skops"), "--data", str(folder / "three.npz")]) == 2
    assert_one_line_error(capsys.readouterr().err, "`--data['y']` holds labels the model does not have: 2; labels "
                                                   "are the classes the model was trained on: 0, 1")


def test_a_command_leaves_the_inference_settings_as_it_found_them(monkeypatch, capsys, tmp_path):
    """``--backend`` names a backend for one command only: after it (run or refused) none is named."""
    from fitaudit.models.inference import settings

    monkeypatch.setattr(settings, "_state", {"backend": "auto", "applied": False, "named": False})
    assert main(["measures", "list", "--backend", "torch"]) == 0
    assert main(["inspect", "--model", str(tmp_path / "missing.onnx"), "--backend", "onnx"]) == 2
    capsys.readouterr()
    assert settings.requested_backend() is None
    assert settings.adaptive_backend() == settings.ADAPTIVE_BACKEND == "eager"
    assert settings.default_backend() == "auto"


@pytest.mark.slow
def test_python_dash_m(tmp_path):
    done = run_module("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"fitaudit {__version__}"
    done = run_module("inspect", "--model", str(tmp_path / "missing.onnx"))
    assert done.returncode == 2
    assert_one_line_error(done.stderr, "does not exist")


HIDDEN_TORCH = """
import sys


class HideOptional:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "onnxruntime", "safetensors"):
            raise ImportError(f"No module named {name!r} (hidden by the test)")


sys.meta_path.insert(0, HideOptional())
import fitaudit, fitaudit.models, fitaudit.data.io
from fitaudit import MissingDependencyError
from fitaudit.cli import main
from fitaudit.models import as_classifier, load_model
from fitaudit.models.architectures import build_architecture
assert main(["--help"]) == 0
for action in (
    lambda: build_architecture({"architecture": "linear", "kwargs": {"in_features": 2, "n_classes": 2}}),
    lambda: load_model(sys.argv[1]),
):
    try:
        action()
    except MissingDependencyError as exc:
        print("MISSING:", exc)
import numpy as np
assert not any(name.split(".")[0] in ("torch", "onnxruntime") for name in sys.modules)
print("SKLEARN-OK", as_classifier(lambda b: np.zeros((len(b), 2))).predict(np.zeros((3, 1))).tolist())
"""


@pytest.mark.slow
def test_import_without_torch(tmp_path):
    onnx_file = tmp_path / "m.onnx"
    onnx_file.write_bytes(b"")
    done = subprocess.run(
        [sys.executable, "-c", HIDDEN_TORCH, str(onnx_file)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    missing = [line for line in done.stdout.splitlines() if line.startswith("MISSING:")]
    assert len(missing) == 2
    assert "pip install 'fitaudit[torch]'" in missing[0]
    assert "pip install 'fitaudit[onnx]'" in missing[1]
    assert "SKLEARN-OK [0, 0, 0]" in done.stdout


def test_inspect_torch_folder_on_images(capsys, tmp_path):
    torch = pytest.importorskip("torch")
    from fitaudit.models import as_classifier, save_torch_model
    from fitaudit.models.architectures import build_architecture

    config = {"architecture": "linear", "kwargs": {"in_features": 16, "n_classes": 3}}
    torch.manual_seed(0)
    module = build_architecture(config)
    save_torch_model(module, config, tmp_path / "net")
    rng = np.random.default_rng(6)
    x = rng.uniform(size=(30, 1, 4, 4)).astype(np.float32)
    y = rng.integers(0, 3, size=30)
    save_npz(tmp_path / "images.npz", x, y)
    args = ["inspect", "--model", str(tmp_path / "net"), "--data", str(tmp_path / "images.npz"), "--image"]
    assert main([*args, "--json", "--batch-size", "7"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["kind"] == "torch" and report["n_classes"] == 3
    assert report["accuracy"] == pytest.approx(np.mean(as_classifier(module).predict(x) == y))
    save_npz(tmp_path / "last.npz", x.transpose(0, 2, 3, 1).repeat(2, axis=1), y)
    assert main(["inspect", "--model", str(tmp_path / "net"), "--data", str(tmp_path / "last.npz"), "--image"]) == 2
    assert_one_line_error(capsys.readouterr().err, "`--data['x']` looks channels-last")
    assert main([*args, "--batch-size", "0"]) == 2
    assert_one_line_error(capsys.readouterr().err, "`--batch-size` must be a positive integer; got 0.")


def test_a_folder_as_data_is_named_as_a_folder(capsys, sklearn_files):
    folder, _, _, _ = sklearn_files
    assert main(["inspect", "--model", str(folder / "model.skops"), "--data", str(folder)]) == 2
    assert_one_line_error(capsys.readouterr().err, f"`--data` must be a file; {str(folder)!r} is a folder.")


def test_scikit_learn_feature_name_warning_does_not_leak(capsys, tmp_path):
    rng = np.random.default_rng(7)
    x = rng.normal(size=(40, 2))
    y = (x[:, 0] > 0).astype(int)
    model = LogisticRegression().fit(x, y)
    model.feature_names_in_ = np.array(["a", "b"], dtype=object)  # as if fitted on a DataFrame
    skops.io.dump(model, tmp_path / "model.skops")
    save_npz(tmp_path / "data.npz", x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a leaked warning would fail the command
        code = main(["inspect", "--model", str(tmp_path / "model.skops"), "--data", str(tmp_path / "data.npz")])
    captured = capsys.readouterr()
    assert code == 0 and "feature names" not in captured.err + captured.out


def _all_parsers(parser: argparse.ArgumentParser, prefix: str = "fitaudit") -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(prefix, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _all_parsers(sub, f"{prefix} {name}")
    return found


def test_every_option_has_plain_help():
    for prog, parser in _all_parsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
                continue
            assert action.help, f"{prog} {action.option_strings}: no help"
        texts = [parser.description or ""] + [a.help or "" for a in parser._actions]
        for text in texts:
            assert not text.rstrip().endswith(":"), f"{prog}: help cut at a colon: {text!r}"
            assert not re.search(r":(func|class|mod|meth|data):|``", text), f"{prog}: Sphinx markup in {text!r}"
            assert "METHODS" + ".md" not in text, f"{prog}: cites a file that is not in the repository"


@pytest.mark.slow
def test_instruments_load_no_command_line_code():
    code = (
        "import sys, fitaudit.overfit, fitaudit.pmv, fitaudit.experiments.overfit, fitaudit.experiments.pmv\n"
        "loaded = [name for name, module in sys.modules.items() if name.startswith('fitaudit')]\n"
        "assert not [name for name in loaded if name.startswith('fitaudit.cli')], loaded\n"
        "users = [name for name in loaded if 'argparse' in vars(sys.modules[name])]\n"
        "assert not users, users\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # and no module of an instrument imports argparse at all
    for package in ("overfit", "pmv"):
        root = Path(fitaudit.__file__).parent / package
        for source in root.rglob("*.py"):
            assert "argparse" not in source.read_text(), source


# ------------------------------------------------------------------ options every command shares
def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], argparse.ArgumentParser]:
    """Every leaf command (``("pgdl", "score")``, ...) and its parser."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return {path: parser}
    found: dict[tuple[str, ...], argparse.ArgumentParser] = {}
    for name, sub in subs[0].choices.items():
        found.update(_commands(sub, (*path, name)))
    return found


def _argv(command: tuple[str, ...], parser: argparse.ArgumentParser, **given: str) -> list[str]:
    """``command`` with dummy values for its required arguments (the check runs before they are read) and ``given``."""
    argv = list(command)
    for action in parser._actions:
        if action.dest in given or not action.required and action.option_strings:
            continue
        if isinstance(action, argparse._SubParsersAction) or action.dest == "help":
            continue
        value = str(next(iter(action.choices))) if action.choices else "1"
        argv += [action.option_strings[0], value] if action.option_strings else [value]
    for dest, value in given.items():
        option = next(a.option_strings[0] for a in parser._actions if a.dest == dest)
        argv += [option, value]
    return argv


def _with(dest: str) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    return [(c, p) for c, p in _commands(build_parser()).items() if any(a.dest == dest for a in p._actions)]


def test_every_writing_command_has_its_output_options_checked():
    from fitaudit.cli._common import OUTPUT_OPTIONS

    writers = {c for dest in OUTPUT_OPTIONS for c, _ in _with(dest)}
    # the commands that write files: every one of them is covered by the test below
    assert {("demo",), ("audit",), ("examine",), ("report",), ("pmv",), ("pgdl", "score"), ("pgdl", "leaderboard"),
            ("pgdl", "zoo", "build"), ("shapes", "sheet"), ("shapes", "render"), ("shapes", "dataset"),
            ("shapes", "train"), ("reproduce", "pmv-tree-depth")} <= writers


@pytest.mark.parametrize("dest", ["out", "checkpoint_dir", "models_dir"])
@pytest.mark.slow
def test_an_unwritable_output_folder_is_one_line_naming_the_option(dest, tmp_path, capsys):
    """A path under a regular file cannot be created by anyone, root included (the tests run as root)."""
    from fitaudit.cli._common import OUTPUT_OPTIONS

    (tmp_path / "afile").write_text("not a folder")
    bad = tmp_path / "afile" / "out"
    option = OUTPUT_OPTIONS[dest]
    commands = _with(dest)
    assert commands
    for command, parser in commands:
        target = str(bad / "report.html") if command == ("report",) else str(bad)
        code = main(_argv(command, parser, **{dest: target}))
        captured = capsys.readouterr()
        assert code == 2, (command, captured.err)
        assert_one_line_error(captured.err, f"`{option}`: cannot write {target!r}: {str(tmp_path / 'afile')!r} is a file, not a folder.")


def test_an_existing_file_as_out_folder_is_named_as_out(tmp_path, capsys):
    """Issue 46: `--out FILE` said "`checkpoint_dir` must be a folder", the Python keyword, not the option."""
    (tmp_path / "afile").write_text("not a folder")
    target = str(tmp_path / "afile")
    commands = [(c, p) for c, p in _with("out") if p.get_default("out_is_folder")]
    assert {("demo",), ("audit",), ("examine",), ("pgdl", "leaderboard"), ("pgdl", "zoo", "build"),
            ("pgdl", "import"), ("shapes", "train"), ("reproduce", "pmv-tree-depth")} <= {c for c, _ in commands}
    for command, parser in commands:
        code = main(_argv(command, parser, out=target))
        captured = capsys.readouterr()
        assert code == 2, (command, captured.err)
        assert_one_line_error(captured.err, f"`--out` must be a folder; {target!r} is an existing file.")


def test_a_write_failing_later_is_one_line(tmp_path, capsys, monkeypatch):
    def denied(args):
        raise PermissionError(13, "Permission denied", str(tmp_path / "locked" / "report.html"))

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", lambda self, argv=None: argparse.Namespace(
        handler=denied, json=False, command="x"))
    assert main(["x"]) == 2
    assert_one_line_error(capsys.readouterr().err, f"cannot access {str(tmp_path / 'locked' / 'report.html')!r}: Permission denied.")


@pytest.mark.parametrize("value", ["0", "-100"])
@pytest.mark.slow
def test_bad_n_jobs_is_refused_by_every_command_that_has_it(value, capsys):
    commands = _with("n_jobs")
    assert {("pmv",), ("examine",), ("audit",), ("demo",), ("pgdl", "score"), ("pgdl", "zoo", "build")} <= {c for c, _ in commands}
    for command, parser in commands:
        code = main(_argv(command, parser, n_jobs=value))
        captured = capsys.readouterr()
        assert code == 2, (command, captured.err)
        assert_one_line_error(captured.err, "`--n-jobs` must be a positive number of workers, or -1 (all cores) down to -")
        assert captured.err.rstrip().endswith(f"got {value}.")


@pytest.mark.slow
def test_inspect_scores_the_centre_crops_of_free_position_canvases(capsys, tmp_path):
    """``shapes dataset --free-position`` writes canvases with a margin: inspect scores their centre crops and says so."""
    torch = pytest.importorskip("torch")
    from fitaudit.models import as_classifier, save_torch_model
    from fitaudit.models.architectures import build_architecture

    data = tmp_path / "canvases.npz"
    assert main(["shapes", "dataset", "--objects-per-class", "1", "--renders-per-object", "2", "--free-position",
                 "--image-size", "16", "--classes", "sphere,cube,torus", "--out", str(data), "--quiet"]) == 0
    capsys.readouterr()
    config = {"architecture": "linear", "kwargs": {"in_features": 3 * 16 * 16, "n_classes": 3}}
    torch.manual_seed(0)
    module = build_architecture(config)
    with np.load(data) as archive:
        canvases, margin = archive["x"], int(archive["margin"])
    assert margin == 3 and canvases.shape[2:] == (22, 22)
    crops = canvases[:, :, 3:-3, 3:-3]
    with np.load(data) as archive:
        y = archive["y"]
    optimiser = torch.optim.SGD(module.parameters(), lr=0.5)  # fitted to 5 of the 6 crops: above chance, as
    for _ in range(200):  # inspect requires (models.labels), and not every one right
        optimiser.zero_grad()
        torch.nn.functional.cross_entropy(module(torch.from_numpy(crops[1:]).float()), torch.from_numpy(y[1:])).backward()
        optimiser.step()
    save_torch_model(module, config, tmp_path / "net")
    assert main(["inspect", "--model", str(tmp_path / "net"), "--data", str(data), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["margin"] == 3 and report["n_examples"] == 6
    assert report["accuracy"] == pytest.approx(np.mean(as_classifier(module).predict(crops) == y))
    assert main(["inspect", "--model", str(tmp_path / "net"), "--data", str(data)]) == 0
    out = capsys.readouterr().out
    assert "Accuracy on the centre crops of the 6 canvases of the data (a 3-pixel margin per side): " in out


@pytest.mark.slow
def test_inspect_answers_the_first_questions(capsys, sklearn_files):
    """With training data and another run, inspect shows the audit's first parts: accuracy, leakage, agreement."""
    folder, model, x, y = sklearn_files
    rng = np.random.default_rng(9)
    # 5 scored rows copied into the training data; 400 other rows, so that 5 exact copies are beyond the
    # training data's own duplicate rate at the leakage test's level (40 rows could not tell)
    x_train = np.concatenate([rng.normal(size=(400, 3)), x[:5]])
    save_npz(folder / "train.npz", x_train, (x_train[:, 0] > 0).astype(int))
    other = LogisticRegression(C=0.01).fit(x_train, (x_train[:, 0] > 0).astype(int))
    skops.io.dump(other, folder / "other.skops")
    args = ["inspect", "--model", str(folder / "model.skops"), "--data", str(folder / "data.npz"),
            "--train-data", str(folder / "train.npz"), "--models", str(folder / "other.skops"), "--quiet"]
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    parts = {p["id"]: p for p in report["first_questions"]}
    assert list(parts) == ["accuracy", "baseline", "calibration", "slices", "labels", "leakage", "agreement"]
    assert parts["accuracy"]["numbers"]["accuracy"] == pytest.approx(model.score(x, y))
    assert parts["leakage"]["verdict"]["status"] == "fail" and parts["leakage"]["numbers"]["exact copies"] == 5
    agree = np.mean(model.predict(x) == other.predict(x))  # a hand count
    assert parts["agreement"]["numbers"]["agreement estimate"] == pytest.approx(agree)
    assert main(args) == 0
    out = capsys.readouterr().out
    from fitaudit.report.badges import badge
    from fitaudit.report.verdicts import split_headline

    for p in parts.values():  # the status's mark, the title and the headline; the details on the next line
        headline, details = split_headline(p["verdict"]["sentence"])
        assert f"  [{badge(p['verdict']['status']).mark}] {p['title']}: {headline}" in out
        assert f"          {details}" in out
    # without training data or other runs the parts say what they need
    assert main(args[:5] + ["--json", "--quiet"]) == 0
    statuses = {p["id"]: p["verdict"]["status"] for p in json.loads(capsys.readouterr().out)["first_questions"]}
    assert statuses["leakage"] == "skipped" and statuses["agreement"] == "skipped"
    assert main(["inspect", "--model", str(folder / "model.skops"), "--train-data", str(folder / "train.npz")]) == 2
    assert_one_line_error(capsys.readouterr().err, "`--train-data` needs the scored data")


@pytest.mark.slow
def test_inspect_first_questions_on_image_folders(capsys, tmp_path):
    torch = pytest.importorskip("torch")
    Image = pytest.importorskip("PIL.Image")
    from fitaudit.models import save_torch_model
    from fitaudit.models.architectures import build_architecture

    config = {"architecture": "mlp", "kwargs": {"in_features": 3 * 8 * 8, "hidden_sizes": [], "n_classes": 2},
              "n_classes": 2, "classes": ["a", "b"], "pipeline": {"resize": 8, "crop": 8}}
    torch.manual_seed(0)
    save_torch_model(build_architecture(config), config, tmp_path / "net")
    rng = np.random.default_rng(2)
    for root in ("test", "train"):
        for name in ("a", "b"):
            (tmp_path / root / name).mkdir(parents=True)
            for i in range(6):
                pixels = rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)
                Image.fromarray(pixels).save(tmp_path / root / name / f"{i}.png")
    for i in range(6):  # six scored images leaked: beyond the training images' own duplicate rate (none)
        copied = tmp_path / "test" / "ab"[i % 2] / f"{i}.png"
        (tmp_path / "train" / "ab"[i % 2] / f"copy{i}.png").write_bytes(copied.read_bytes())
    assert main(["inspect", "--model", str(tmp_path / "net"), "--images", str(tmp_path / "test"),
                 "--train-images", str(tmp_path / "train"), "--json", "--quiet"]) == 0
    parts = {p["id"]: p for p in json.loads(capsys.readouterr().out)["first_questions"]}
    assert parts["accuracy"]["numbers"]["examples"] == 12
    assert parts["leakage"]["verdict"]["status"] == "fail" and parts["leakage"]["numbers"]["exact copies"] == 6



@pytest.mark.slow
def test_inspect_models_with_gradient_boosting_skops_files(capsys, sklearn_files):
    """Two gradient-boosting runs saved with skops: their agreement is measured (they failed to fingerprint)."""
    from sklearn.ensemble import GradientBoostingClassifier

    folder, _, x, y = sklearn_files
    runs = [GradientBoostingClassifier(n_estimators=10, subsample=0.5, random_state=seed).fit(x, y) for seed in (0, 1)]
    for seed, run in enumerate(runs):
        skops.io.dump(run, folder / f"gb{seed}.skops")
    assert main(["inspect", "--model", str(folder / "gb0.skops"), "--data", str(folder / "data.npz"),
                 "--models", str(folder / "gb1.skops"), "--quiet", "--json"]) == 0
    parts = {p["id"]: p for p in json.loads(capsys.readouterr().out)["first_questions"]}
    agree = np.mean(runs[0].predict(x) == runs[1].predict(x))  # a hand count
    assert parts["agreement"]["numbers"]["agreement estimate"] == pytest.approx(agree)


@pytest.mark.parametrize(("given", "named"), [
    ({"data": "d.npz"}, "`--data['x']`"),
    ({"images": "folder"}, "`--images`"),
    ({"data": "d.npz", "train_data": "t.npz"}, "`--data['x']` or `--train-data['x']`"),
    ({"model": "m.onnx"}, "`--model`"),
    ({}, "`x`"),
])
def test_library_data_names_become_the_options_given(given, named):
    import argparse

    from fitaudit.cli import _as_options

    parser = argparse.ArgumentParser()
    for option in ("--data", "--images", "--train-data", "--model"):
        parser.add_argument(option)
    args = parser.parse_args([arg for name, value in given.items() for arg in (f"--{name.replace('_', '-')}", value)])
    message = _as_options("`x`: the torch model failed on a batch of shape (3, 5).", parser, args)
    assert message == f"{named}: the torch model failed on a batch of shape (3, 5)."
