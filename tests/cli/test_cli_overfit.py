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
    assert 0.3 < run_info["risk_plain"] < 1
    assert result["reject"] == (result["pvalue"] < 0.05)


@pytest.mark.slow
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
    # untrained runs on random labels: the least accurate is at chance, so no verdict on them
    assert verdict.startswith("Inconclusive: accuracy ") and "at or below chance" in verdict
    assert "--classes" in out.splitlines()[1]  # the details after the headline
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


def test_overfit_on_centred_canvases_is_inconclusive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Objects always in the middle: (G3) fails, the command says so instead of a verdict."""
    rng = np.random.default_rng(1)
    canvases = np.zeros((120, 2, SIDE + 2 * MARGIN, SIDE + 2 * MARGIN), dtype=np.float32)
    canvases[:, :, MARGIN + 2 : MARGIN + 4, MARGIN + 2 : MARGIN + 4] = rng.uniform(0.5, 1.0, (120, 2, 2, 2))
    np.savez(tmp_path / "centred.npz", x=canvases, y=rng.integers(0, N_CLASSES, 120))
    model = save_mlp(tmp_path / "m", 0)
    argv = ["overfit", "--model", model, "--data", tmp_path / "centred.npz", "--eps", 1, "--margin", MARGIN, "--quiet"]
    code, out, _ = run(capsys, *argv)
    assert code == 0
    head = out.splitlines()[0]
    assert head.startswith("Inconclusive: the images break the test's assumption G3") and "m = 120 images" in out
    details = out.splitlines()[1]
    assert details.startswith("The objects in these images sit in a preferred place")
    assert "test's assumption G3 fails" in details and "anywhere in the frame" in details
    assert "G3 fails" in out and "G3 check (120 images)" in out
    code, out, _ = run(capsys, *argv, "--json")
    g3 = json.loads(out)["test"]["g3"]
    assert g3["violated"] is True and g3["pvalue"] < g3["level"] == 0.05 and g3["low"] > 0.5 and "threshold" not in g3
    assert g3["n_images"] == 120 and g3["n_test"] == 60 and g3["statistic"] == round(g3["accuracy"] * 60)


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


@pytest.mark.slow
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


# ----------------------------------------------------------------------------- --images

Image = pytest.importorskip("PIL.Image")

IMG_CROP, IMG_RESIZE = 12, 18  # P = 3, eps = 1


def write_image_folder(root: Path, classes=("a", "b", "c"), per_class: int = 4, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    for name in classes:
        (root / name).mkdir(parents=True)
        for i in range(per_class):
            pixels = rng.integers(0, 256, (int(rng.integers(18, 26)), int(rng.integers(18, 26)), 3), dtype=np.uint8)
            fmt, ext = ("JPEG", "jpg") if i % 2 else ("PNG", "png")
            Image.fromarray(pixels).save(root / name / f"{i}.{ext}", fmt)
    return root


def save_image_mlp(folder: Path, seed: int, **extra: object) -> Path:
    from fitaudit.models import save_torch_model
    from fitaudit.models.architectures import build_architecture

    config = {
        "architecture": "mlp",
        "kwargs": {"in_features": 3 * IMG_CROP * IMG_CROP, "hidden_sizes": [], "n_classes": 3},
        "n_classes": 3, **extra,
    }
    torch.manual_seed(seed)
    return save_torch_model(build_architecture(config), config, folder)


@pytest.fixture()
def image_files(tmp_path: Path) -> dict[str, Path]:
    return {
        "images": write_image_folder(tmp_path / "imgs"),
        "model": save_image_mlp(tmp_path / "m1", 0),
        "model2": save_image_mlp(tmp_path / "m2", 1),
        "folder": tmp_path,
    }


@pytest.mark.slow
def test_overfit_on_an_image_folder(image_files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["overfit", "--model", image_files["model"], "--images", image_files["images"],
            "--resize", IMG_RESIZE, "--crop", IMG_CROP, "--mean", 0.5, 0.5, 0.5, "--std", 0.25, 0.25, 0.25,
            "--quiet", "--image-batch", 5]
    code, out, _ = run(capsys, *argv, "--json")
    assert code == 0
    result = json.loads(out)
    assert result["type"] == "OverfitCommandResult" and result["m"] == 12
    assert result["pipeline"] == {"resize": 18, "crop": 12, "mean": [0.5] * 3, "std": [0.25] * 3, "margin": 3,
                                  "channels": 3}
    assert result["eps"] == 1 and result["margin"] == 3 and result["source"] == str(image_files["images"])
    assert result["broken"] == [] and "(G3)" in result["warning"]
    # the same numbers as the library on the same folder
    from fitaudit.data.images import open_images
    from fitaudit.data.pipeline import EvalPipeline
    from fitaudit.models import load_model
    from fitaudit.overfit.images import overfit_test_images

    pipeline = EvalPipeline(resize=18, crop=12, mean=(0.5,) * 3, std=(0.25,) * 3)
    expected = overfit_test_images([load_model(image_files["model"])], open_images(image_files["images"]), pipeline).test
    assert result["pvalue"] == pytest.approx(expected.pvalue, rel=1e-12, abs=1e-15)
    code, out, _ = run(capsys, *argv)
    assert code == 0 and f"Images: {image_files['images']}; m = 12 images." in out
    # the pipeline is said once, in the words of report.pipelines (the old "Images: ... resized to" line said it twice)
    assert out.count("resize 18 (shorter side), centre crop 12, mean [0.5, 0.5, 0.5], std [0.25, 0.25, 0.25]") == 1
    assert out.count("Pipeline: ") == 1 and "resized to" not in out
    assert "no normalisation" not in out


def test_overfit_records_the_device_backend_and_precision(image_files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """The result names how the model ran (issue 39): device, backend, mode, precision; the summary says it."""
    argv = ["overfit", "--model", image_files["model"], "--images", image_files["images"], "--resize", IMG_RESIZE,
            "--crop", IMG_CROP, "--quiet", "--backend", "eager", "--precision", "fp32"]
    code, out, _ = run(capsys, *argv, "--json")
    assert code == 0
    record = json.loads(out)["inference"]
    assert record["device"] == "cpu" and record["backend"] == "torch" and record["mode"] == "eager"
    assert record["precision"] == "fp32" and "disagreement" not in record
    code, out, _ = run(capsys, *argv)
    assert code == 0 and "The model ran on cpu through torch (eager), exact fp32." in out
    code, _, err = run(capsys, *argv[:-1], "fp16")
    assert code == 2 and "--precision" in err and "fp16" in err


def test_overfit_images_pipeline_and_classes_from_the_model_file(
    image_files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    model = save_image_mlp(
        image_files["folder"] / "m3", 2, classes=["c", "b", "a"], pipeline={"resize": 18, "crop": 12},
    )
    code, out, _ = run(capsys, "overfit", "--model", model, "--images", image_files["images"], "--json", "--quiet")
    assert code == 0
    result = json.loads(out)
    assert result["pipeline"]["resize"] == 18 and result["m"] == 12
    assert result["pipeline_choice"]["normalisation"] == "none"  # said in the summary (report.pipelines)
    # labels follow the model's class order: folder 'a' is output 2
    from fitaudit.data.images import open_images

    assert list(open_images(image_files["images"], classes=["c", "b", "a"]).labels[:4]) == [2, 2, 2, 2]


def test_same_weights_twice_is_not_an_n_model_test(
    image_files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    copy = shutil.copytree(image_files["model"], image_files["folder"] / "copy")
    for other in (image_files["model"], copy):
        code, out, err = run(
            capsys, "overfit", "--model", image_files["model"], "--models", other, "--images",
            image_files["images"], "--resize", IMG_RESIZE, "--crop", IMG_CROP, "--quiet",
        )
        assert code == 2 and out == "" and "has the same weights as" in err and "not the same model twice" in err


def test_overfit_images_n_model(image_files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "overfit", "--model", image_files["model"], "--models", image_files["model2"], "--images",
        image_files["images"], "--resize", IMG_RESIZE, "--crop", IMG_CROP, "--quiet", "--json",
    )
    assert code == 0
    result = json.loads(out)
    assert result["n_models"] == 2 and result["test"]["type"] == "NModelTestResult" and len(result["runs"]) == 2


def test_broken_images_listed_or_skipped(image_files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    bad = image_files["images"] / "b" / "1.jpg"
    bad.write_bytes(bad.read_bytes()[:200])
    argv = ["overfit", "--model", image_files["model"], "--images", image_files["images"],
            "--resize", IMG_RESIZE, "--crop", IMG_CROP, "--quiet"]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "1 of 12 files are not usable images" in err and str(bad) in err and "--skip-broken" in err
    code, out, _ = run(capsys, *argv, "--skip-broken", "--json")
    result = json.loads(out)
    assert code == 0 and result["m"] == 11 and len(result["broken"]) == 1 and str(bad) in result["broken"][0]
    assert "1 broken image files left out (--skip-broken)" in result["notes"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--resize", 10, "--crop", 12], r"`--resize` must be at least `--crop`"),
        (["--resize", 18, "--crop", 12, "--eps", 2], r"`--eps` 2 needs 3 \* eps = 6 spare pixels per side"),
        (["--resize", 14, "--crop", 12], r"leave P = floor\(\(R - C\) / 2\) = 1 spare pixels"),
        (["--resize", 18, "--crop", 12, "--mean", 0.5, 0.5], r"expected 3 arguments|`--mean`"),
        (["--resize", 18, "--crop", 10], r"`--crop` 10 gives the model 3x10x10 images, and model .* refuses them"),
        # no pipeline recorded: the crop is the model's declared input side (12), the resize defaults to it
        ([], r"`--resize` 12 and `--crop` 12 leave P = .* = 0 spare pixels"),
        (["--crop", 12], r"`--resize` 12 and `--crop` 12 leave P = .* = 0 spare pixels"),  # R defaults to C
        (["--resize", 18, "--crop", 12, "--data", "x.npz"], r"give one of `--images`"),
        (["--resize", 18, "--crop", 12, "--shards", 0], r"`--shards` must be a positive integer; got 0"),
        (["--resize", 18, "--crop", 12, "--decode-threads", 0], r"`--decode-threads` must be a positive integer; got 0"),
    ],
)
def test_overfit_images_bad_input(
    image_files: dict[str, Path], capsys: pytest.CaptureFixture[str], extra: list, message: str
) -> None:
    code, out, err = run(
        capsys, "overfit", "--model", image_files["model"], "--images", image_files["images"], "--quiet", *extra
    )
    assert code == 2 and out == ""
    assert re.search(message, err), err


def test_class_folders_must_match_the_model(image_files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    four = write_image_folder(image_files["folder"] / "four", classes=("a", "b", "c", "d"), per_class=2)
    code, _, err = run(
        capsys, "overfit", "--model", image_files["model"], "--images", four, "--resize", 18, "--crop", 12, "--quiet"
    )
    assert code == 2 and "has 4 classes (a, b, c, d) but model" in err and "has 3 outputs" in err
    named = save_image_mlp(image_files["folder"] / "named", 0, classes=["a", "b", "x"])
    code, _, err = run(
        capsys, "overfit", "--model", named, "--images", image_files["images"], "--resize", 18, "--crop", 12, "--quiet"
    )
    assert code == 2 and "has classes the model does not know: 'c'" in err


def test_user_architecture_needs_trust_code(image_files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    folder = image_files["folder"] / "own"
    folder.mkdir()
    (folder / "net.py").write_text(
        "import torch\n\n\nclass Net(torch.nn.Module):\n"
        "    def __init__(self, n_classes):\n        super().__init__()\n"
        "        self.layer = torch.nn.Sequential(torch.nn.Linear(3 * 12 * 12, n_classes))\n\n"
        "    def forward(self, x):\n        return self.layer(x.flatten(1))\n"
    )
    import safetensors.torch

    torch.manual_seed(0)
    same_layout = torch.nn.ModuleDict({"layer": torch.nn.Sequential(torch.nn.Linear(3 * 12 * 12, 3))})
    safetensors.torch.save_model(same_layout, str(folder / "weights.safetensors"))
    (folder / "config.json").write_text(json.dumps(
        {"architecture": {"file": "net.py", "class": "Net"}, "kwargs": {"n_classes": 3}}
    ))
    argv = ["overfit", "--model", folder, "--images", image_files["images"], "--resize", 18, "--crop", 12, "--quiet"]
    code, out, err = run(capsys, *argv)
    assert code == 2 and "pass --trust-code" in err and "runs that file's code" in err
    code, out, _ = run(capsys, *argv, "--trust-code", "--json")
    assert code == 0 and json.loads(out)["m"] == 12



@pytest.mark.slow
def test_overfit_images_shards_and_checkpoints_give_the_same_numbers(
    image_files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["overfit", "--model", image_files["model"], "--images", image_files["images"], "--resize", IMG_RESIZE,
            "--crop", IMG_CROP, "--quiet", "--json", "--image-batch", 3]
    code, out, _ = run(capsys, *base)
    plain = json.loads(out)
    store = image_files["folder"] / "ckpt"
    for extra in (["--shards", 3], ["--checkpoint-dir", store], ["--checkpoint-dir", store]):
        code, out, _ = run(capsys, *base, *extra)
        assert code == 0 and json.loads(out)["pvalue"] == plain["pvalue"]
    assert len([p for p in store.rglob("*") if p.is_file()]) >= 4  # one unit per batch of 3 images


def colour_folder(root: Path, per_class: int = 10, seed: int = 0) -> Path:
    """Folders red/, green/, blue/ of noisy images of their colour (sorted order: blue, green, red)."""
    rng = np.random.default_rng(seed)
    for k, name in enumerate(("red", "green", "blue")):
        (root / name).mkdir(parents=True)
        for i in range(per_class):
            pixels = rng.integers(0, 120, (20, 20, 3))
            pixels[:, :, k] += 120
            Image.fromarray(pixels.astype(np.uint8)).save(root / name / f"{i}.png")
    return root


def save_colour_model(folder: Path, **extra: object) -> Path:
    """A linear model whose class k is the brightest channel of (blue, green, red): right in sorted folder order."""
    from fitaudit.models import save_torch_model
    from fitaudit.models.architectures import build_architecture

    config = {"architecture": "mlp", "kwargs": {"in_features": 3 * IMG_CROP * IMG_CROP, "hidden_sizes": [],
                                                "n_classes": 3}, "n_classes": 3, **extra}
    net = build_architecture(config)
    linear = net[-1]
    with torch.no_grad():
        linear.bias.zero_()
        linear.weight.zero_()
        for k, channel in enumerate((2, 1, 0)):  # class 0 = blue, 1 = green, 2 = red
            linear.weight.view(3, 3, IMG_CROP, IMG_CROP)[k, channel] = 1.0
    return save_torch_model(net, config, folder)


@pytest.mark.slow
def test_classes_order_the_folders_and_a_wrong_order_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--classes maps folder names to the model's outputs; the wrong order is at chance and stops the verdict."""
    images = colour_folder(tmp_path / "imgs")
    model = save_colour_model(tmp_path / "m")
    argv = ["overfit", "--model", model, "--images", images, "--resize", IMG_RESIZE, "--crop", IMG_CROP,
            "--quiet"]
    code, out, _ = run(capsys, *argv)  # sorted order blue, green, red: the model's
    assert code == 0 and "at or below chance" not in out.splitlines()[0]
    code, out, _ = run(capsys, *argv, "--classes", "red,green,blue")
    head = out.splitlines()[0]
    assert code == 0 and head.startswith("Inconclusive: accuracy ") and "at or below chance" in head
    assert "m = 30 images" in out
    assert "0.333" in head and "--classes" in out  # green still right: 10 of 30; the hint in the details
    # the same through the library: open_images with the order, the result's chance check
    from fitaudit.data.images import open_images
    from fitaudit.data.pipeline import EvalPipeline
    from fitaudit.models import load_model
    from fitaudit.overfit.images import overfit_test_images

    pipeline = EvalPipeline(resize=IMG_RESIZE, crop=IMG_CROP)
    result = overfit_test_images([load_model(model)], open_images(images, classes=["red", "green", "blue"]),
                                 pipeline).test
    assert result.chance is not None and result.chance.at_or_below and result.chance.accuracy == pytest.approx(1 / 3)
    assert result.verdict().reason == "accuracy_at_chance"
    right = overfit_test_images([load_model(model)], open_images(images), pipeline).test
    assert right.chance is not None and right.chance.accuracy == 1.0


def test_classes_must_agree_with_the_names_the_model_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    images = colour_folder(tmp_path / "imgs", per_class=2)
    model = save_colour_model(tmp_path / "m", classes=["blue", "green", "red"])
    argv = ["overfit", "--model", model, "--images", images, "--resize", IMG_RESIZE, "--crop", IMG_CROP, "--quiet"]
    code, _, err = run(capsys, *argv, "--classes", "red,green,blue")
    assert code == 2 and "`--classes` red,green,blue contradicts the class names the model records" in err
    code, _, err = run(capsys, *argv, "--classes", "blue,blue,red")
    assert code == 2 and "`--classes` names a class twice" in err
    code, _, err = run(capsys, "overfit", "--model", model, "--data", tmp_path / "x.npz", "--eps", 1, "--margin", 3,
                       "--classes", "a,b,c")
    assert code == 2 and "--classes" in err


# --------------------------------------------------------------------------- --stride and --mirror (issue 50)

WIDE = 12  # margin room for eps 1 at stride 4 (3 * eps * stride)


@pytest.fixture()
def wide(files: dict[str, Path]) -> Path:
    """The `files` model's 6x6 crops on canvases with a margin of 12 (random pixels and labels)."""
    rng = np.random.default_rng(1)
    canvases = rng.random((40, 2, SIDE + 2 * WIDE, SIDE + 2 * WIDE)).astype(np.float32)
    path = files["folder"] / "wide.npz"
    np.savez(path, x=canvases, y=rng.integers(0, N_CLASSES, size=40))
    return path


def test_overfit_stride_and_mirror_are_recorded_and_change_the_aeg(
    files: dict[str, Path], wide: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["overfit", "--model", files["model"], "--data", wide, "--margin", WIDE, "--eps", 1, "--quiet"]
    results = {}
    for extra in ((), ("--stride", 4), ("--stride", 4, "--mirror")):
        code, out, _ = run(capsys, *base, *extra, "--json")
        assert code == 0
        results[extra] = json.loads(out)
    plain, strided, mirrored = results.values()
    assert (plain["stride"], plain["mirror"]) == (1, False) and plain["test"]["aeg"].startswith("TranslationAEG(")
    assert plain["test"]["moves"] == {"eps": 1, "stride": 1, "mirror": False}
    assert (strided["stride"], strided["mirror"]) == (4, False) and "stride=4" in strided["test"]["aeg"]
    assert mirrored["mirror"] and mirrored["test"]["aeg"].startswith("MirrorTranslationAEG(")
    assert mirrored["test"]["moves"] == {"eps": 1, "stride": 4, "mirror": True}
    assert mirrored["test"]["g3"]["mirror"] and mirrored["test"]["g3"]["stride"] == 4  # G3 checked on the AEG's maps
    # other shifts, other adversarial examples: the same crops, another R_g (R_S is the centre crops')
    assert strided["runs"][0]["risk_plain"] == plain["runs"][0]["risk_plain"]
    assert strided["runs"][0]["risk_adversarial"] != plain["runs"][0]["risk_adversarial"]
    # the mirror images double the candidates: twice the images scored per example
    assert mirrored["runs"][0]["evaluations_per_example"] == 2 * strided["runs"][0]["evaluations_per_example"]
    code, out, _ = run(capsys, *base, "--stride", 4, "--mirror")
    assert code == 0
    assert "The AEG shifted the crops by multiples of 4 px, up to 4 px per axis, and also tried their mirror images." in out
    assert "eps = 1, stride = 4 px (shifts up to 4 px), with mirror images, margin = 12" in out
    code, out, _ = run(capsys, *base)
    assert code == 0 and "The AEG shifted" not in out and "stride =" not in out  # the paper's AEG, as before


def test_overfit_stride_bad_values_name_the_flag(
    files: dict[str, Path], wide: Path, image_files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["overfit", "--model", files["model"], "--data", wide, "--margin", WIDE, "--eps", 1, "--quiet"]
    for value in (0, -2):
        code, _, err = run(capsys, *base, "--stride", value)
        assert code == 2 and f"`--stride` must be a positive integer; got {value}." in err
    code, _, err = run(capsys, *base, "--stride", 5)  # 3 * 1 * 5 = 15 > 12
    assert code == 2 and "`--margin` must be at least 3 * `--eps` * `--stride` = 15" in err and "--stride <= 4" in err
    code, _, err = run(capsys, *base, "--eps", 2, "--stride", 4)
    assert code == 2 and "= 24 spare pixels per side; got 12 (use --eps 1" in err
    # an image pipeline with P = 3 has room for stride 1 only
    code, _, err = run(capsys, "overfit", "--model", image_files["model"], "--images", image_files["images"],
                       "--resize", IMG_RESIZE, "--crop", IMG_CROP, "--stride", 2, "--quiet")
    assert code == 2 and "the translational AEG at `--stride` 2 needs P >= 3 eps * stride = 6 eps" in err
    assert "or use --stride <= 1" in err
    code, _, err = run(capsys, "overfit", "--model", image_files["model"], "--images", image_files["images"],
                       "--resize", 36, "--crop", IMG_CROP, "--eps", 2, "--stride", 4, "--quiet")
    assert code == 2 and "`--eps` 2 needs 3 * eps * `--stride` 4 = 24 spare pixels per side" in err


def test_overfit_images_stride_keys_its_checkpoints(
    image_files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    store = image_files["folder"] / "ckpt"
    base = ["overfit", "--model", image_files["model"], "--images", image_files["images"], "--resize", 36,
            "--crop", IMG_CROP, "--quiet", "--json", "--image-batch", 6, "--checkpoint-dir", store]

    def units() -> set[Path]:
        return {p for p in store.rglob("*") if p.is_file()}

    code, out, _ = run(capsys, *base)  # P = 12: eps = 4 at stride 1
    plain = json.loads(out)
    assert code == 0 and (plain["eps"], plain["stride"]) == (4, 1)
    first = units()
    code, out, _ = run(capsys, *base, "--stride", 4)  # eps = floor(12 / 12) = 1
    strided = json.loads(out)
    assert code == 0 and (strided["eps"], strided["stride"], strided["mirror"]) == (1, 4, False)
    second = units()
    assert first < second  # new batch units: the stride-1 batches were not read back for stride 4
    assert strided["runs"][0]["evaluations_per_example"] != plain["runs"][0]["evaluations_per_example"]
    code, out, _ = run(capsys, *base, "--stride", 4)
    assert code == 0 and units() == second and json.loads(out)["pvalue"] == strided["pvalue"]  # resumed
    code, out, _ = run(capsys, *base, "--stride", 4, "--mirror")
    assert code == 0 and json.loads(out)["test"]["aeg"].startswith("MirrorTranslationAEG(") and units() > second


def test_audit_stride_and_mirror(files: dict[str, Path], wide: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = files["folder"] / "audit"
    base = ["audit", "--model", files["model"], "--data", wide, "--margin", WIDE, "--eps", 1, "--out", out,
            "--quiet", "--instruments", "overfit", "--json"]
    parts = {}
    for extra in (("--stride", 4, "--mirror"), ("--stride", 1)):
        code, text, _ = run(capsys, *base, *extra)
        assert code == 0
        saved = json.loads((out / "audit.json").read_text())
        assert json.loads(text) == saved
        assert saved["settings"]["stride"] == int(extra[1]) and saved["settings"]["mirror"] == ("--mirror" in extra)
        parts[extra[1]] = {p["id"]: p for p in saved["parts"]}["overfit-test"]
    strided, plain = parts[4], parts[1]
    assert strided["settings"]["aeg"] == "MirrorTranslationAEG(eps=1, margin=12, variant='strongest', stride=4)"
    assert plain["settings"]["aeg"] == "TranslationAEG(eps=1, margin=12, variant='strongest')"
    assert strided["key"] != plain["key"] and not plain["resumed"]  # the stride-4 part is not reused for stride 1
    assert "tried their mirror images" in strided["verdict"]["sentence"]
    code, _, err = run(capsys, *base[:-1], "--stride", 5)
    assert code == 2 and "`--stride` 5 needs canvases with at least 3 * stride = 15 spare pixels" in err
