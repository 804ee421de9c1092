"""Defects found by a sweep of bad input over the command line, each fixed at its source: one test per fix."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.cli import main
from fitaudit.data.io import save_npz
from fitaudit.options import RunOptions

#: this module's audits run without progress bars
QUIET = RunOptions(progress=False)

torch = pytest.importorskip("torch")

MLP = {"architecture": "mlp", "kwargs": {"in_features": 4, "hidden_sizes": [6], "n_classes": 3}}


def assert_one_line_error(err: str, fragment: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("fitaudit: error: ") and fragment in lines[0], lines[0]
    assert "Traceback" not in err


def save_mlp(folder: Path, seed: int = 0) -> Path:
    from fitaudit.models import save_torch_model
    from fitaudit.models.architectures import build_architecture

    torch.manual_seed(seed)
    return save_torch_model(build_architecture(MLP), MLP, folder)


@pytest.fixture
def vectors(tmp_path: Path) -> Path:
    """30 random vectors labelled by the seed-0 MLP (save_mlp, onnx_runs[0]): that model is above chance on them,
    as inspect requires (fitaudit.models.labels.stop_at_chance; an audit would go on and fail its baseline
    part); the seed-1 run is not."""
    from fitaudit.models.architectures import build_architecture

    rng = np.random.default_rng(0)
    x = rng.normal(size=(30, 4)).astype(np.float32)
    torch.manual_seed(0)
    with torch.no_grad():
        y = build_architecture(MLP)(torch.from_numpy(x)).argmax(1).numpy()
    y[:6] = (y[:6] + 1) % 3  # not all right: accuracy 0.8
    return save_npz(tmp_path / "data.npz", x, y)


def test_weights_that_do_not_fit_the_config_are_one_line(tmp_path, capsys):
    """torch lists one size mismatch per tensor, one per line: the message keeps the first and counts the rest."""
    from fitaudit.models import load_model

    folder = save_mlp(tmp_path / "net")
    config = json.loads((folder / "config.json").read_text())
    config["kwargs"]["hidden_sizes"] = [9]  # every tensor of the hidden layer changes shape
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(InputError, match=r"size mismatch for .*\(and \d+ more lines\)") as caught:
        load_model(folder, name="--model")
    assert "\n" not in str(caught.value)
    assert main(["inspect", "--model", str(folder)]) == 2
    assert_one_line_error(capsys.readouterr().err, "`--model`: could not read weights from")


@pytest.fixture(scope="module")
def onnx_runs(tmp_path_factory) -> list[Path]:
    """Two ONNX files of the 4-input MLP (seeds 0 and 1)."""
    from fitaudit.models import export_onnx
    from fitaudit.models.architectures import build_architecture

    folder = tmp_path_factory.mktemp("onnx")
    paths = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        paths.append(export_onnx(build_architecture(MLP), folder / f"run{seed}.onnx", input_shape=(4,)))
    return paths


@pytest.mark.slow
def test_inspect_compares_onnx_runs(onnx_runs, vectors, capsys):
    """`inspect --models run.onnx` keys the agreement part by the ONNX file's bytes (it failed: a session has no fingerprint)."""
    from fitaudit.models import load_model
    from fitaudit.models.fingerprint import model_fingerprint

    paths = onnx_runs
    keys = [model_fingerprint(load_model(p)) for p in paths]
    assert keys[0] != keys[1] and keys[0] == model_fingerprint(load_model(paths[0]))
    assert main(["inspect", "--model", str(paths[0]), "--data", str(vectors), "--models", str(paths[1]),
                 "--json", "--quiet"]) == 0
    parts = {p["id"]: p for p in json.loads(capsys.readouterr().out)["first_questions"]}
    assert parts["agreement"]["verdict"]["status"] != "skipped", parts["agreement"]
    with np.load(vectors) as arrays:  # the estimate is the two files' agreement, counted here independently
        x, y = arrays["x"], arrays["y"]
    first, second = (np.asarray(load_model(p).predict(x)) for p in paths)
    assert parts["agreement"]["numbers"]["agreement estimate"] == pytest.approx(np.mean(first == second))
    assert parts["agreement"]["numbers"]["measured accuracy"] == pytest.approx(np.mean(first == y))


@pytest.mark.parametrize(
    "argv",
    [
        ["pmv", "--dataset", "moons", "--estimator", "knn", "--checkpoint-dir", "{file}"],
        ["leakage", "--data", "{data}", "--train-data", "{data}", "--checkpoint-dir", "{file}"],
        ["pgdl", "score", "--task", "{tmp}", "--checkpoint-dir", "{file}"],
    ],
)
def test_a_file_given_as_checkpoint_folder_is_refused_before_any_work(argv, tmp_path, vectors, capsys):
    """`--checkpoint-dir FILE` passed the writability check (a file may be replaced) and failed later, unnamed."""
    file = tmp_path / "notes.txt"
    file.write_text("x")
    argv = [a.format(file=file, data=vectors, tmp=tmp_path) for a in argv]
    assert main(argv) == 2
    assert_one_line_error(capsys.readouterr().err, f"`--checkpoint-dir` must be a folder; {str(file)!r} is an existing file.")


def test_overfit_on_images_refuses_a_file_as_checkpoint_folder(tmp_path):
    """The library checks it too, before any image is scored (it failed on 'FILE/model-0': Not a directory)."""
    from PIL import Image

    from fitaudit.data.images import open_images
    from fitaudit.data.pipeline import EvalPipeline
    from fitaudit.overfit.images import overfit_test_images

    for label in ("a", "b"):
        (tmp_path / "images" / label).mkdir(parents=True)
        Image.new("RGB", (12, 12)).save(tmp_path / "images" / label / "0.png")
    file = tmp_path / "notes.txt"
    file.write_text("x")
    with pytest.raises(InputError, match=r"`checkpoint_dir` must be a folder; .* is an existing file"):
        overfit_test_images([lambda x: np.zeros((len(x), 2))], open_images(tmp_path / "images"),
                            EvalPipeline(resize=12, crop=6), checkpoint_dir=file)


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["pmv", "--dataset", "moons", "--estimator", "knn", "--seed", "-1"], "--seed"),
        (["shapes", "train", "--data-seed", "-2", "--out", "{tmp}/run"], "--data-seed"),
        (["shapes", "sheet", "--world-seed", "-3", "--out", "{tmp}/sheet.png"], "--world-seed"),
    ],
)
def test_a_negative_seed_names_its_option(argv, option, tmp_path, capsys):
    """It was reported as `random_state` (or `world_seed`), a name the command line does not have."""
    assert main([a.format(tmp=tmp_path) for a in argv]) == 2
    assert_one_line_error(capsys.readouterr().err, f"`{option}` must be a non-negative integer seed; got -")


@pytest.mark.slow
def test_examine_counts_the_classes_of_a_model_that_records_no_names(tmp_path, capsys):
    """The count check still guards models without recorded names (the recorded ones are now compared by name)."""
    from fitaudit.models import save_torch_model
    from fitaudit.models.architectures import build_architecture

    config = {"architecture": "shapes_alexnet", "kwargs": {"width": 4, "n_classes": 2}, "input_shape": [3, 16, 16]}
    folder = save_torch_model(build_architecture(config), config, tmp_path / "net")
    argv = ["examine", "--model", str(folder), "--classes", "sphere,cube,torus", "--steps", "2", "--instances", "2",
            "--out", str(tmp_path / "out"), "--quiet"]
    assert main(argv) == 2
    assert_one_line_error(capsys.readouterr().err, "`--classes` names 3 classes (sphere, cube, torus) but the model has 2 outputs")


def save_recorded_shapes_net(folder: Path) -> Path:
    """An untrained Shapes AlexNet (16 x 16 inputs) whose config records its class names sphere, cube."""
    from fitaudit.models import save_torch_model
    from fitaudit.models.architectures import build_architecture

    config = {"architecture": "shapes_alexnet", "kwargs": {"width": 4, "n_classes": 2}, "input_shape": [3, 16, 16],
              "metadata": {"class_names": ["sphere", "cube"]}}
    torch.manual_seed(0)
    return save_torch_model(build_architecture(config), config, folder)


def test_audit_refuses_shapes_classes_in_another_order_than_the_model_records(tmp_path):
    """--shapes-classes cube,sphere on a sphere,cube model examined every render against the wrong label."""
    from fitaudit import audit
    from fitaudit.data.shapes import ShapesGenerator

    model = save_recorded_shapes_net(tmp_path / "net")
    rng = np.random.default_rng(0)
    data = (rng.random((6, 3, 16, 16)).astype(np.float32), np.array([0, 1] * 3))
    generator = ShapesGenerator(1, classes=["cube", "sphere"], split="test", image_size=16)
    with pytest.raises(InputError, match=r"`generator` \(--shapes-classes\) cube,sphere contradicts the class names "
                                         r"the model records, in its label order: sphere,cube\."):
        audit(str(model), data, generator=generator, instruments=["examine"], options=QUIET)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"examiner": "annealing"}, "`examiner` must be one of bo, grid, "),
        ({"examine_steps": 0}, "`examine_steps` must be a positive integer; got 0."),
        ({"eps": 0}, "`eps` must be a positive integer; got 0."),
        ({"margin": -1}, "`margin` must be an integer >= 0; got -1."),
        ({"train_images": "folder"}, "`train_images` goes with `images`; with `data`, give the training data as `train_data`."),
        ({"pipeline": {"resize": 34}}, "`pipeline` with `data` arrays sets only `mean` and `std`"),
        ({"skip_broken": True}, "`skip_broken` goes with `images`; it does nothing with `data`."),
    ],
)
def test_audit_checks_its_settings_when_their_parts_do_not_run(kwargs, message, tmp_path):
    """On tabular data neither the examiner nor the AEG runs: bad settings for them passed without a word."""
    from sklearn.linear_model import LogisticRegression

    from fitaudit import audit

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(20, 3)), np.array([0, 1] * 10)
    with pytest.raises(InputError, match=re.escape(message)):
        audit(LogisticRegression().fit(x, y), (x, y), checkpoint_dir=tmp_path, options=QUIET, **kwargs)
    assert not (tmp_path / "parts").exists()  # refused before any part ran


@pytest.mark.parametrize(("option", "value"), [("--examine-objects", "0"), ("--image-size", "0")])
def test_audit_cli_checks_its_shapes_options_when_unused(option, value, tmp_path, vectors, capsys):
    model = tmp_path / "model.skops"
    import skops.io
    from sklearn.linear_model import LogisticRegression

    with np.load(vectors) as data:
        skops.io.dump(LogisticRegression().fit(data["x"], data["y"]), model)
    assert main(["audit", "--model", str(model), "--data", str(vectors), "--out", str(tmp_path / "out"),
                 option, value]) == 2
    assert_one_line_error(capsys.readouterr().err, f"`{option}` must be a positive integer; got 0.")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--data", "c.npz", "--eps", "1", "--margin", "3", "--checkpoint-dir", "ck"],
         "`--checkpoint-dir` goes with `--images`; it does nothing with `--data`."),
        (["--data", "c.npz", "--eps", "1", "--margin", "3", "--shards", "0"], "`--shards` goes with `--images`"),
        (["--data", "c.npz", "--eps", "1", "--margin", "3", "--n-jobs", "2"], "`--n-jobs` goes with `--images`"),
        (["--data", "c.npz", "--eps", "1", "--margin", "3", "--crop", "8"],
         "`--crop` goes with `--images`"),
        (["--data", "c.npz", "--eps", "1", "--margin", "3", "--skip-broken"], "`--skip-broken` goes with `--images`"),
        (["--images", "folder", "--resize", "38", "--crop", "32", "--margin", "3"],
         "`--margin` goes with `--data`; with `--images` the margin is P = floor((R - C) / 2)."),
    ],
)
def test_overfit_refuses_options_of_the_other_kind_of_data(extra, message, tmp_path, capsys, monkeypatch):
    """They were ignored without a word: e.g. --checkpoint-dir with --data kept nothing to resume from."""
    monkeypatch.chdir(tmp_path)
    assert main(["overfit", "--model", "m.onnx", *extra]) == 2
    assert_one_line_error(capsys.readouterr().err, message)


def test_leaderboard_refuses_a_task_given_twice(tiny_pgdl_task, capsys):
    """`--task T --task T` printed 'On 2 tasks' and averaged the same task twice."""
    from fitaudit.pgdl.leaderboard import leaderboard

    with pytest.raises(InputError, match=r"`tasks` names .* twice; give each task once\."):
        leaderboard([tiny_pgdl_task, tiny_pgdl_task / "."], ["dist_fro"], options=QUIET)
    assert main(["pgdl", "leaderboard", "--task", str(tiny_pgdl_task), "--task", str(tiny_pgdl_task),
                 "--measure", "dist_fro", "--out", str(tiny_pgdl_task.parent / "board")]) == 2
    assert_one_line_error(capsys.readouterr().err, "twice; give each task once.")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--threshold", "0.5", "--quantile", "0.01"],
         "give `--threshold` (a fixed distance) or `--quantile` (a calibrated one), not both."),
        (["--skip-broken"], "`--skip-broken` goes with `--images`; it does nothing with `--data`."),
        (["--image-batch", "0"], "`--image-batch` goes with `--images`"),
        (["--train-images", "folder"], "`--train-images` goes with `--images`"),
        (["--crop", "32"], "`--crop` goes with `--images`"),
    ],
)
def test_leakage_on_arrays_refuses_contradicting_or_unused_options(extra, message, vectors, capsys):
    """The threshold won over an explicit quantile, and image-folder options were ignored, without a word."""
    assert main(["leakage", "--data", str(vectors), "--train-data", str(vectors), *extra]) == 2
    assert_one_line_error(capsys.readouterr().err, message)


def test_leakage_on_folders_names_its_options(tmp_path, capsys):
    """--train-data was ignored with --images; --image-batch 0 was reported as `batch_size`."""
    base = ["leakage", "--images", str(tmp_path), "--train-images", str(tmp_path), "--resize", "8", "--crop", "8"]
    assert main([*base, "--train-data", "train.npz"]) == 2
    assert_one_line_error(capsys.readouterr().err, "`--train-data` goes with `--data`; with `--images`, give the "
                                                    "training images as `--train-images`.")
    assert main([*base, "--image-batch", "0"]) == 2
    assert_one_line_error(capsys.readouterr().err, "`--image-batch` must be a positive integer; got 0.")


def test_rank_models_refuses_measures_with_n_measures(tiny_pgdl_task, capsys):
    """`--n-measures` was ignored when `--measure` named the measures."""
    from fitaudit.pgdl.leaderboard import rank_models

    with pytest.raises(InputError, match=r"give `measures` .* or `n_measures` .*, not both\."):
        rank_models(tiny_pgdl_task, ["dist_fro"], n_measures=2, options=QUIET)
    assert main(["pgdl", "rank", "--task", str(tiny_pgdl_task), "--measure", "dist_fro", "--n-measures", "2"]) == 2
    assert_one_line_error(capsys.readouterr().err, "not both.")


@pytest.mark.parametrize("command", [["score"], ["rank"], ["leaderboard", "--out", "{tmp}/board"]])
def test_budget_and_no_budget_exclude_each_other(command, tiny_pgdl_task, tmp_path, capsys):
    """`--budget-s 5 --no-budget` ran without a budget, silently."""
    argv = ["pgdl", *(a.format(tmp=tmp_path) for a in command), "--task", str(tiny_pgdl_task), "--budget-s", "5",
            "--no-budget"]
    assert main(argv) == 2
    assert_one_line_error(capsys.readouterr().err, "argument --no-budget: not allowed with argument --budget-s")


@pytest.mark.slow
def test_a_library_error_spanning_lines_is_printed_on_one(onnx_runs, tmp_path, capsys):
    """onnxruntime's message for inputs of the wrong shape spans lines; the CLI printed them as they came."""
    rng = np.random.default_rng(0)
    train = save_npz(tmp_path / "train.npz", rng.normal(size=(10, 3)).astype(np.float32), rng.integers(0, 3, 10))
    for path in onnx_runs:
        (tmp_path / "models").mkdir(exist_ok=True)
        (tmp_path / "models" / path.name).write_bytes(path.read_bytes())
    (tmp_path / "runs.csv").write_text("model,train_acc,test_acc,lr\nrun0.onnx,0.9,0.8,0.1\nrun1.onnx,0.9,0.7,0.2\n")
    assert main(["pgdl", "import", "--models", str(tmp_path / "models"), "--table", str(tmp_path / "runs.csv"),
                 "--train-data", str(train), "--out", str(tmp_path / "population")]) == 2
    assert_one_line_error(capsys.readouterr().err, "`--models`: 'run0.onnx' does not run on `--train-data` inputs")


def image_folder(root: Path, classes: tuple[str, ...] = ("sphere", "cube"), broken: bool = True) -> Path:
    """Two 20 x 20 PNG images per class, and a truncated PNG in the last class."""
    from PIL import Image

    rng = np.random.default_rng(0)
    for name in classes:
        (root / name).mkdir(parents=True)
        for i in range(2):
            Image.fromarray((rng.random((20, 20, 3)) * 255).astype(np.uint8)).save(root / name / f"{i}.png")
    if broken:
        whole = (root / classes[0] / "0.png").read_bytes()
        (root / classes[-1] / "broken.png").write_bytes(whole[: len(whole) // 3])
    return root


def test_broken_images_suggest_skip_broken_only_where_it_exists(tmp_path):
    """inspect, examine and pgdl import suggested `--skip-broken`, an option they do not have."""
    from fitaudit.data.images import check_images, open_images
    from fitaudit.data.pipeline import EvalPipeline

    data = open_images(image_folder(tmp_path / "images"))
    with pytest.raises(InputError, match=r"broken\.png .*Remove them, or pass --skip-broken to leave them out"):
        check_images(data)
    with pytest.raises(InputError, match=r"broken\.png .*Remove them\.$"):
        check_images(data, skip_option=None)
    with pytest.raises(InputError, match=r"broken\.png' .*; remove it or pass --skip-broken \(run the check first"):
        list(data.batches(EvalPipeline(resize=16, crop=16), batch_size=8))
    with pytest.raises(InputError, match=r"broken\.png' .*; remove it\.$"):
        list(data.batches(EvalPipeline(resize=16, crop=16), batch_size=8, skip_option=None))


@pytest.mark.parametrize("command", ["inspect", "examine"])
def test_commands_without_skip_broken_do_not_suggest_it(command, tmp_path, capsys):
    model = save_recorded_shapes_net(tmp_path / "net")
    folder = image_folder(tmp_path / "images")
    argv = [command, "--model", str(model), "--images", str(folder), "--resize", "16", "--crop", "16", "--quiet"]
    if command == "examine":
        argv += ["--steps", "2", "--instances", "2", "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert_one_line_error(err, "broken.png")
    assert "--skip-broken" not in err


def test_audit_names_the_model_argument_of_an_unreadable_file(tmp_path):
    """Both `model` and `models` files were reported as `path`, which is neither argument."""
    from sklearn.linear_model import LogisticRegression

    from fitaudit import audit

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(20, 3)), np.array([0, 1] * 10)
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(rng.bytes(200))
    with pytest.raises(InputError, match=r"^`model`: file .*bad\.onnx' could not be opened as an ONNX model"):
        audit(str(bad), (x, y), options=QUIET)
    with pytest.raises(InputError, match=r"^`models`: file .*bad\.onnx' could not be opened as an ONNX model"):
        audit(LogisticRegression().fit(x, y), (x, y), models=[str(bad)], options=QUIET)


def test_inspect_names_crop_when_the_model_takes_another_size(tmp_path, capsys):
    """A crop of the wrong size was reported as the shape of `x`, an argument the command line does not have."""
    model = save_recorded_shapes_net(tmp_path / "net")  # 16 x 16 inputs
    folder = image_folder(tmp_path / "images", broken=False)
    assert main(["inspect", "--model", str(model), "--images", str(folder), "--resize", "12", "--crop", "12",
                 "--quiet"]) == 2
    assert_one_line_error(capsys.readouterr().err, "`--crop` 12 gives the model 3x12x12 images, and model ")
    assert main(["inspect", "--model", str(model), "--images", str(folder), "--resize", "16", "--crop", "16",
                 "--quiet"]) == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--test-objects-per-class", "0"], "`--test-objects-per-class` must be a positive integer; got 0."),
        (["train", "--validation-objects-per-class", "-1"], "`--validation-objects-per-class` must be a positive integer"),
        (["train", "--eval-renders-per-object", "0"], "`--eval-renders-per-object` must be a positive integer; got 0."),
        (["render", "--class", "torus", "--classes", "sphere,cube"], "`--classes` does nothing for `shapes render`"),
    ],
)
def test_shapes_names_the_option_at_fault(argv, message, tmp_path, capsys):
    """Three options were all reported as `n_objects_per_class`/`renders_per_object`; render ignored --classes."""
    out = tmp_path / ("run" if argv[0] == "train" else "r.png")
    assert main(["shapes", *argv, "--out", str(out), "--quiet"]) == 2
    assert_one_line_error(capsys.readouterr().err, message)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--resize", "34"], "`--resize` goes with `--images`; it does nothing with `--data`."),
        (["--skip-broken"], "`--skip-broken` goes with `--images`"),
        (["--train-images", "folder"], "`--train-images` goes with `--images`"),
    ],
)
def test_audit_on_arrays_refuses_image_folder_options(extra, message, tmp_path, vectors, capsys):
    """--mean with --data asked for --resize and --crop 'with --images'; --skip-broken was ignored."""
    assert main(["audit", "--model", "model.skops", "--data", str(vectors), "--out", str(tmp_path / "out"), *extra]) == 2
    assert_one_line_error(capsys.readouterr().err, message)


def user_architecture(folder: Path) -> Path:
    """A torch model folder whose config.json names its own architecture file (a Linear layer on 4 inputs)."""
    folder.mkdir()
    (folder / "net.py").write_text(
        "import torch\n\n\nclass Net(torch.nn.Sequential):\n"
        "    def __init__(self, n_classes=3):\n        super().__init__(torch.nn.Flatten(), torch.nn.Linear(3 * 16 * 16, n_classes))\n"
    )
    (folder / "config.json").write_text(json.dumps({"architecture": {"file": "net.py", "class": "Net"},
                                                    "kwargs": {"n_classes": 2}, "input_shape": [3, 16, 16],
                                                    "classes": ["sphere", "cube"]}))
    from safetensors.torch import save_model

    torch.manual_seed(0)
    save_model(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 16 * 16, 2)), str(folder / "weights.safetensors"))
    return folder


@pytest.mark.parametrize("command", ["inspect", "examine"])
def test_the_trust_code_the_message_asks_for_exists(command, tmp_path, capsys):
    """inspect, examine and leakage told the user to pass --trust-code, which they did not accept."""
    model = user_architecture(tmp_path / "net")
    argv = [command, "--model", str(model)]
    if command == "examine":
        argv += ["--steps", "0", "--instances", "1", "--out", str(tmp_path / "out"), "--quiet"]
    assert main(argv) == 2
    assert_one_line_error(capsys.readouterr().err, "If you trust the file, pass --trust-code")
    code = main([*argv, "--trust-code"])
    err = capsys.readouterr().err
    if command == "examine":  # loaded: the examination's own check comes next
        assert code == 2 and "`--steps` must be a positive integer; got 0." in err
    else:
        assert code == 0, err


def labelled_by(model: Path, x: np.ndarray) -> np.ndarray:
    """The untrained model's own predictions as labels: above chance, as inspect and leakage --model require
    (an audit would go on, its baseline part failing)."""
    from fitaudit.models import load_model

    return np.asarray(load_model(model, trust_code=True).predict(x))


@pytest.mark.slow
def test_leakage_accepts_trust_code(tmp_path, capsys):
    model = user_architecture(tmp_path / "net")
    rng = np.random.default_rng(0)
    x = rng.random((8, 3, 16, 16)).astype(np.float32)
    data = save_npz(tmp_path / "d.npz", x, labelled_by(model, x))
    argv = ["leakage", "--model", str(model), "--data", str(data), "--train-data", str(data), "--quiet"]
    assert main(argv) == 2
    assert_one_line_error(capsys.readouterr().err, "pass --trust-code")
    assert main([*argv, "--trust-code"]) == 0


def test_inspect_names_images_whose_labels_the_model_lacks(tmp_path, capsys):
    """A CSV label past the model's outputs was reported as `y_true`, an argument the command line does not have."""
    model = save_recorded_shapes_net(tmp_path / "net")  # 2 outputs
    folder = image_folder(tmp_path / "images", broken=False)
    listing = tmp_path / "list.csv"
    listing.write_text(f"path,label\n{folder / 'sphere' / '0.png'},0\n{folder / 'cube' / '0.png'},2\n")
    assert main(["inspect", "--model", str(model), "--images", str(listing), "--resize", "16", "--crop", "16",
                 "--quiet"]) == 2
    assert_one_line_error(capsys.readouterr().err, f"`--images`: {str(listing)!r} has label 2, but model ")


@pytest.mark.slow
def test_leakage_refuses_image_arrays_on_two_scales(tmp_path, capsys):
    """The same images in [0, 255] and in [0, 1] were reported as '0 of 8 have a near twin'."""
    rng = np.random.default_rng(0)
    images = rng.random((8, 3, 16, 16)).astype(np.float32)
    labels = np.array([0, 1] * 4)
    scored = save_npz(tmp_path / "scored.npz", images * 255, labels)
    train = save_npz(tmp_path / "train.npz", images, labels)
    assert main(["leakage", "--data", str(scored), "--train-data", str(train), "--quiet"]) == 2
    assert_one_line_error(capsys.readouterr().err, "give both images on one scale (e.g. [0, 1]).")
    assert main(["leakage", "--data", str(train), "--train-data", str(train), "--quiet", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["exact_scored"]) == 8
    standardised = save_npz(tmp_path / "standardised.npz", (images - 0.5) / 0.25, labels)  # to about [-2, 2]
    centred = (images[:, :, :4] - 0.5) / 0.6  # in about [-0.83, 0.83]: all below 1
    dim = save_npz(tmp_path / "dim.npz", centred, labels)
    dim_train = save_npz(tmp_path / "dim_train.npz", centred * 1.5, labels)  # one set above 1, the other not
    for data, reference in ((standardised, standardised), (dim, dim_train)):  # standardised (below 0): not refused
        assert main(["leakage", "--data", str(data), "--train-data", str(reference), "--quiet"]) == 0


def test_import_summary_writes_a_gap_range_that_reads_with_minus_signs(onnx_runs, vectors, tmp_path, capsys):
    """'gap -0.467--0.367' read as a subtraction."""
    (tmp_path / "models").mkdir()
    for path in onnx_runs:
        (tmp_path / "models" / path.name).write_bytes(path.read_bytes())
    (tmp_path / "runs.csv").write_text("model,train_acc,test_acc,lr\nrun0.onnx,0.2,0.9,0.1\nrun1.onnx,0.1,0.8,0.2\n")
    assert main(["pgdl", "import", "--models", str(tmp_path / "models"), "--table", str(tmp_path / "runs.csv"),
                 "--train-data", str(vectors), "--out", str(tmp_path / "population")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"; gap \(train - test accuracy\) from -?\d\.\d{3} to -?\d\.\d{3}\.", out), out


def test_inspect_does_not_call_a_model_that_ran_its_own_code_loaded_safely(tmp_path, capsys):
    """With --trust-code the architecture file ran, yet the summary said 'loaded safely'."""
    from fitaudit.models.io import runs_code

    user = user_architecture(tmp_path / "user")
    builtin = save_recorded_shapes_net(tmp_path / "builtin")
    assert runs_code(user) and runs_code(user / "config.json") and runs_code(tmp_path / "net.pt")
    assert not runs_code(builtin) and not runs_code(tmp_path / "model.onnx")
    assert main(["inspect", "--model", str(user), "--trust-code"]) == 0
    assert capsys.readouterr().out.startswith(f"{user} loaded by running the code it brings (as --trust-code")
    assert main(["inspect", "--model", str(builtin), "--trust-code", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs_code"] is False


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["examine", "--factor", "camera_roll=1:2", "--factor", "camera_roll=3:4"],
         "`--factor` sets 'camera_roll' twice; give each factor once."),
        (["examine", "--range", "camera_roll=0,1", "--factor", "camera_roll=5,6"],
         "`--range` and `--factor` both set camera_roll; give each factor once."),
        (["shapes", "render", "--class", "cube", "--factor", "camera_roll=1", "--factor", "camera_roll=2"],
         "`--factor` sets 'camera_roll' twice"),
        (["shapes", "dataset", "--objects-per-class", "1", "--range", "camera_roll=0,1", "--range", "camera_roll=2,3"],
         "`--range` sets 'camera_roll' twice"),
    ],
)
def test_a_factor_set_twice_is_refused(argv, message, tmp_path, capsys):
    """The last setting won without a word."""
    out = {"examine": tmp_path / "out", "shapes": tmp_path / ("r.png" if argv[1] == "render" else "d.npz")}[argv[0]]
    extra = ["--model", str(save_recorded_shapes_net(tmp_path / "net")), "--steps", "2"] if argv[0] == "examine" else []
    assert main([*argv, *extra, "--out", str(out), "--quiet"]) == 2
    assert_one_line_error(capsys.readouterr().err, message)


def test_pmv_refuses_a_parameter_set_twice(capsys):
    from sklearn.linear_model import LogisticRegression

    from fitaudit.pmv.catalogue import parse_params

    with pytest.raises(InputError, match=r"`--param` sets 'C' twice; give each parameter once\."):
        parse_params(["C=1", "C=2"], LogisticRegression(), "logistic_regression")
    assert main(["pmv", "--dataset", "moons", "--estimator", "logistic_regression", "--param", "C=1",
                 "--param", "C=2"]) == 2
    assert_one_line_error(capsys.readouterr().err, "`--param` sets 'C' twice")


def test_a_copy_of_the_audited_model_is_not_another_run(onnx_runs, vectors, tmp_path, capsys):
    """A copy under another name passed as a second run: the agreement (1.000) and the N-model test passed trivially."""
    from fitaudit import audit

    copy = tmp_path / "copy.onnx"
    copy.write_bytes(onnx_runs[0].read_bytes())
    with np.load(vectors) as data:
        x, y = data["x"], data["y"]
    with pytest.raises(InputError, match=r"^`models`: .*copy\.onnx' has the same weights as .*run0\.onnx'"):
        audit(str(onnx_runs[0]), (x, y), models=[str(copy)], options=QUIET)
    for command in (["inspect", "--data", str(vectors)], ["overfit", "--data", str(vectors), "--eps", "1", "--margin", "3"]):
        assert main([command[0], "--model", str(onnx_runs[0]), "--models", str(copy), *command[1:]]) == 2
        assert_one_line_error(capsys.readouterr().err, "copy.onnx' has the same weights as ")
    assert main(["inspect", "--model", str(onnx_runs[0]), "--models", str(onnx_runs[1]), "--data", str(vectors),
                 "--quiet"]) == 0


@pytest.mark.parametrize(
    "argv",
    [
        ["shapes", "sheet", "--n-random", "0", "--classes", "cube", "--image-size", "8"],
        ["shapes", "render", "--class", "cube", "--image-size", "8"],
        ["shapes", "dataset", "--objects-per-class", "1", "--renders-per-object", "1", "--image-size", "8"],
    ],
)
def test_an_output_file_that_is_a_folder_is_named(argv, tmp_path, capsys):
    """It failed on the rename of a temporary file: '[Errno 21] Is a directory: .../.out.png.x1y2.tmp'."""
    folder = tmp_path / ("out.npz" if argv[1] == "dataset" else "out.png")
    folder.mkdir()
    assert main([*argv, "--out", str(folder)]) == 2
    assert_one_line_error(capsys.readouterr().err, f"`--out` must be a file path; {str(folder)!r} is a folder.")


def test_an_atomic_write_onto_a_folder_names_it(tmp_path):
    """Library writers failed on the rename of their temporary file, naming that file."""
    from fitaudit.checkpoint import atomic_save_npz, atomic_write_text

    (tmp_path / "out.npz").mkdir()
    with pytest.raises(InputError, match=r"cannot write the file .*out\.npz': it is a folder\."):
        atomic_save_npz(tmp_path / "out.npz", {"x": np.zeros(2)})
    with pytest.raises(InputError, match=r"cannot write the file .*out\.npz': it is a folder\."):
        atomic_write_text(tmp_path / "out.npz", "x")
    assert [p.name for p in tmp_path.iterdir()] == ["out.npz"]  # no temporary file left behind


def test_overfit_refuses_a_margin_the_canvases_contradict(tmp_path, capsys):
    """`--margin 3` on canvases saved with margin 4 scored crops that were not the file's images, silently."""
    model = save_recorded_shapes_net(tmp_path / "net")  # 16 x 16 inputs
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "canvases.npz", x=rng.random((6, 3, 24, 24)).astype(np.float32), y=np.array([0, 1] * 3),
             margin=np.int64(4))
    argv = ["overfit", "--model", str(model), "--data", str(tmp_path / "canvases.npz"), "--eps", "1", "--quiet"]
    assert main([*argv, "--margin", "3"]) == 2
    assert_one_line_error(capsys.readouterr().err, "`--margin` 3 contradicts the margin 4 that `--data` records")
    assert main([*argv, "--margin", "4"]) == 0


@pytest.mark.slow
def test_audit_accepts_trust_code_for_the_model_and_its_runs(tmp_path, capsys):
    """audit had no --trust-code, yet its load error told the user to pass it."""
    model = user_architecture(tmp_path / "net")
    other = user_architecture(tmp_path / "net2")
    torch.manual_seed(1)
    from safetensors.torch import save_model

    save_model(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 16 * 16, 2)), str(other / "weights.safetensors"))
    rng = np.random.default_rng(0)
    x = rng.random((8, 3, 16, 16)).astype(np.float32)
    data = save_npz(tmp_path / "d.npz", x, labelled_by(model, x))
    argv = ["audit", "--model", str(model), "--models", str(other), "--data", str(data),
            "--out", str(tmp_path / "out"), "--quiet"]
    assert main(argv) == 2
    assert_one_line_error(capsys.readouterr().err, "If you trust the file, pass --trust-code")
    assert main([*argv, "--trust-code", "--json"]) == 0
    parts = {p["id"]: p for p in json.loads(capsys.readouterr().out)["parts"]}
    assert parts["agreement"]["verdict"]["status"] != "skipped"
    from fitaudit.models import load_model

    x = np.load(data)["x"]  # the estimate is these two runs' agreement, counted here independently
    first, second = (np.asarray(load_model(p, trust_code=True).predict(x)) for p in (model, other))
    assert parts["agreement"]["numbers"]["agreement estimate"] == pytest.approx(np.mean(first == second))
