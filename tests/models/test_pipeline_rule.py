"""One pipeline rule, said aloud (issue 31 item 3): every command uses the pipeline the model records unless told
otherwise, shows the accuracy under both when it uses another, and says when no normalisation is known.

The model is a grey brightness classifier whose class depends on the mean
of its normalised input; the images have a centre patch at the class's
brightness inside a border at the opposite brightness, so the recorded
pipeline (resize 8, crop 8: border and centre) and a zoomed one (resize 16,
crop 8: the centre only) give different accuracies, and so do normalised
and raw pixel values. Every expected accuracy is computed here by hand
(plain Pillow, plain torch) from the files.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import fitaudit
from fitaudit.cli import main
from fitaudit.data.pipeline import EvalPipeline
from fitaudit.data.pipeline_rule import choose_normalisation, choose_pipeline
from fitaudit.options import RunOptions

#: this module's audits run without progress bars
QUIET = RunOptions(progress=False)

torch = pytest.importorskip("torch")
Image = pytest.importorskip("PIL.Image")

CLASSES = ["dark", "mid", "bright"]
LEVELS = (50, 125, 200)
RECORDED = {"resize": 8, "crop": 8, "mean": [0.5], "std": [0.25]}


def write_folder(root, seed=0, per_class=5):
    """``root/<class>/<i>.png``: a 12 x 12 centre at the class's level inside a 24-ish border at 255 minus it."""
    rng = np.random.default_rng(seed)
    for level, name in zip(LEVELS, CLASSES):
        (root / name).mkdir(parents=True)
        for i in range(per_class):
            side = int(rng.integers(22, 27))
            pixels = np.full((side, side), 255 - level, np.float64)
            start = (side - 12) // 2
            pixels[start:start + 12, start:start + 12] = level
            pixels = np.clip(pixels + rng.normal(0, 8, pixels.shape), 0, 255).astype(np.uint8)
            Image.fromarray(pixels, mode="L").save(root / name / f"{i}.png")
    return root


def module():
    """Flatten + linear: logits (-z - 0.5, 0, z - 0.5) of z, the mean of the 8 x 8 input."""
    from fitaudit.models.architectures import build_architecture

    net = build_architecture({"architecture": "linear", "kwargs": {"in_features": 64, "n_classes": 3}})
    with torch.no_grad():
        net[-1].weight.copy_(torch.tensor([[-1.0 / 64] * 64, [0.0] * 64, [1.0 / 64] * 64]))
        net[-1].bias.copy_(torch.tensor([-0.5, 0.0, -0.5]))
    return net.eval()


def save(tmp_path, pipeline=RECORDED, name="model"):
    from fitaudit.models import save_torch_model

    config = {"architecture": "linear", "kwargs": {"in_features": 64, "n_classes": 3}, "input_shape": [1, 8, 8],
              "classes": CLASSES}
    return save_torch_model(module(), {**config, **({"pipeline": pipeline} if pipeline else {})}, tmp_path / name)


def crops(folder, resize, crop):
    """Every file resized (shorter side) and centre-cropped by hand, in [0, 1], (n, 1, crop, crop); labels."""
    images, labels = [], []
    for k, name in enumerate(CLASSES):
        for path in sorted((folder / name).iterdir()):
            image = Image.open(path).convert("L")
            width, height = image.size
            size = (resize, int(resize * height / width)) if width <= height else (int(resize * width / height), resize)
            image = image.resize(size, Image.BILINEAR)
            top, left = int(round((size[1] - crop) / 2.0)), int(round((size[0] - crop) / 2.0))
            images.append(np.asarray(image.crop((left, top, left + crop, top + crop)), np.float32)[None] / 255.0)
            labels.append(k)
    return np.stack(images), np.asarray(labels)


def accuracy(x, y, mean=0.0, std=1.0):
    with torch.no_grad():
        predicted = module()(torch.from_numpy((x - np.float32(mean)) / np.float32(std))).numpy().argmax(axis=1)
    return float(np.mean(predicted == y))


def inspect_json(capsys, *argv):
    assert main(["inspect", *map(str, argv), "--json", "--quiet"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def inspect_text(capsys, *argv):
    assert main(["inspect", *map(str, argv), "--quiet"]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


@pytest.fixture()
def folder(tmp_path):
    return write_folder(tmp_path / "test")


def test_the_rule_keeps_the_recorded_pipeline_beside_the_one_used():
    recorded = [("m", RECORDED)]
    choice = choose_pipeline(recorded)
    assert choice.pipeline == choice.recorded == EvalPipeline(8, 8, (0.5,), (0.25,))
    assert not choice.differs and choice.normalisation == "recorded" and choice.recorded_by == "m"
    zoomed = choose_pipeline(recorded, resize=16)
    assert zoomed.differs and zoomed.given == ("resize",) and zoomed.pipeline == EvalPipeline(16, 8, (0.5,), (0.25,))
    assert zoomed.recorded == choice.pipeline and zoomed.to_dict(0.9, 0.3)["recorded_accuracy"] == 0.3
    assert choice.to_dict(0.9, 0.3)["recorded_accuracy"] is None  # the same pipeline: one accuracy
    bare = choose_pipeline([("m", None)], resize=8, crop=8)
    assert bare.normalisation == "none" and bare.recorded is None and not bare.differs
    # arrays: only the normalisation, the recorded one unless given; 0/1 changes nothing
    x = np.full((2, 1, 8, 8), 0.5, np.float32)
    arrays = choose_normalisation(recorded, x)
    assert arrays.arrays and arrays.normalises and not arrays.differs
    assert not choose_normalisation(recorded, x[:, :, :4]).differs  # another size is not another pipeline
    given = choose_normalisation(recorded, x, mean=[0.0], std=[1.0])
    assert given.differs and not given.normalises and given.classifier("model") == "model"
    assert choose_normalisation(recorded, x.reshape(2, -1)).pipeline is None  # features: no pipeline
    with pytest.raises(fitaudit.InputError, match=r"`--data`: x holds values in \[-1, 0.5\].*--mean 0 --std 1"):
        choose_normalisation(recorded, np.concatenate([x, -np.ones_like(x)]))


def test_npz_arrays_get_the_normalisation_the_model_records(tmp_path, folder, capsys):
    """The .npz defect: the model's config.json mean/std were ignored on --data arrays."""
    model = save(tmp_path)
    x, y = crops(folder, 16, 8)
    canvases, _ = crops(folder, 16, 16)  # the same crops with a 4-pixel margin (the overfitting test's)
    np.testing.assert_array_equal(canvases[:, :, 4:12, 4:12], x)
    np.savez(tmp_path / "test.npz", x=canvases, y=y, margin=4)
    normalised, raw = accuracy(x, y, 0.5, 0.25), accuracy(x, y)
    assert normalised > raw  # the arrays score differently with and without it
    out = inspect_json(capsys, "--model", model, "--data", tmp_path / "test.npz")
    assert out["accuracy"] == pytest.approx(normalised)
    assert out["pipeline"]["normalisation"] == "recorded" and out["pipeline"]["used"] == {"mean": [0.5], "std": [0.25]}
    # --mean 0 --std 1: arrays already normalised; both accuracies shown
    out = inspect_json(capsys, "--model", model, "--data", tmp_path / "test.npz", "--mean", "0", "--std", "1")
    assert out["accuracy"] == pytest.approx(raw)
    assert out["pipeline"]["differs"] and out["pipeline"]["recorded_accuracy"] == pytest.approx(normalised)
    text = inspect_text(capsys, "--model", model, "--data", tmp_path / "test.npz", "--mean", "0", "--std", "1")
    assert f"Accuracy {raw:.4f} under this pipeline, {normalised:.4f} under the one the model records." in text
    # the audit scores the arrays as inspect does
    result = fitaudit.audit(str(model), str(tmp_path / "test.npz"), instruments=["overfit"], options=QUIET)
    assert result.subject["accuracy"] == pytest.approx(normalised)
    assert result.subject["pipeline"]["normalisation"] == "recorded"
    # arrays that cannot be pixel values in [0, 1] are refused, with the way out
    np.savez(tmp_path / "scaled.npz", x=x * 255, y=y)
    assert main(["inspect", "--model", str(model), "--data", str(tmp_path / "scaled.npz"), "--quiet"]) == 2
    assert "applies to pixel values in [0, 1]" in capsys.readouterr().err


@pytest.mark.slow
def test_another_pipeline_than_the_recorded_one_shows_both_accuracies(tmp_path, folder, capsys):
    """The zoom defect: an accuracy at a zoomed pipeline was shown as the model's without a word."""
    model = save(tmp_path)
    zoomed, recorded = accuracy(*crops(folder, 16, 8), 0.5, 0.25), accuracy(*crops(folder, 8, 8), 0.5, 0.25)
    assert zoomed > recorded + 0.3
    out = inspect_json(capsys, "--model", model, "--images", folder, "--resize", "16")
    assert out["accuracy"] == pytest.approx(zoomed)
    assert out["pipeline"]["recorded_accuracy"] == pytest.approx(recorded)
    assert out["pipeline"]["given"] == ["resize"] and out["pipeline"]["recorded"]["resize"] == 8
    text = inspect_text(capsys, "--model", model, "--images", folder, "--resize", "16")
    assert f"Accuracy {zoomed:.4f} under this pipeline, {recorded:.4f} under the one the model records." in text
    assert "--resize replacing the resize 8 (shorter side), centre crop 8" in text
    # the recorded pipeline itself: one accuracy, said to be the model's
    out = inspect_json(capsys, "--model", model, "--images", folder)
    assert out["accuracy"] == pytest.approx(recorded) and out["pipeline"]["recorded_accuracy"] is None
    # the audit: both in its result, its summary and its report
    result = fitaudit.audit(str(model), images=str(folder), pipeline={"resize": 16}, instruments=["overfit"],
                            options=QUIET)
    assert result.subject["accuracy"] == pytest.approx(zoomed)
    assert result.subject["pipeline"]["recorded_accuracy"] == pytest.approx(recorded)
    from fitaudit.report.audit import summary_text

    assert f"{recorded:.4f} under the one the model records" in summary_text(result)
    from fitaudit.report import save_audit

    save_audit(result, tmp_path / "audit")
    assert f"{recorded:.4f} under the one the model records" in (tmp_path / "audit" / "report.html").read_text()


def test_no_normalisation_known_is_said(tmp_path, folder, capsys):
    """inspect gave an accuracy without a word when neither the options nor the model gave a mean and std."""
    model = save(tmp_path, pipeline=None)
    x, y = crops(folder, 8, 8)
    out = inspect_json(capsys, "--model", model, "--images", folder, "--resize", "8", "--crop", "8")
    assert out["accuracy"] == pytest.approx(accuracy(x, y)) and out["pipeline"]["normalisation"] == "none"
    text = inspect_text(capsys, "--model", model, "--images", folder, "--resize", "8", "--crop", "8")
    assert "No normalisation known" in text
    np.savez(tmp_path / "test.npz", x=crops(folder, 16, 8)[0], y=y)
    assert "No normalisation known" in inspect_text(capsys, "--model", model, "--data", tmp_path / "test.npz")
    text = inspect_text(capsys, "--model", model, "--images", folder, "--resize", "8", "--crop", "8",
                        "--mean", "0.5", "--std", "0.25")
    assert "No normalisation known" not in text and "mean [0.5], std [0.25]; given (--resize, --crop, --mean" in text


@pytest.mark.slow
def test_examine_uses_the_onnx_files_pipeline_not_a_config_beside_it(tmp_path, folder, capsys):
    """examine read a torch config.json lying beside an ONNX file as the ONNX model's, and ignored the ONNX metadata."""
    pytest.importorskip("onnxruntime")
    from fitaudit.models import export_onnx

    own = {"resize": 16, "crop": 8, "mean": [0.5], "std": [0.25]}
    model = export_onnx(module(), tmp_path / "models" / "net.onnx", input_shape=(1, 8, 8),
                        metadata={"classes": CLASSES, "pipeline": own})
    save(tmp_path / "models", pipeline={"resize": 8, "crop": 8, "mean": [0.2], "std": [0.5]}, name=".")
    assert (tmp_path / "models" / "config.json").is_file()  # a torch model beside the ONNX file
    argv = ["examine", "--model", str(model), "--images", str(folder), "--examiner", "random", "--steps", "1",
            "--instances", "3", "--out", str(tmp_path / "out"), "--quiet"]
    assert main([*argv, "--json"]) == 0, capsys.readouterr().err
    result = json.loads(capsys.readouterr().out)
    assert result["pipeline"]["used"] == {**own, "channels": 1, "margin": 4}
    assert result["pipeline"]["recorded_by"] == str(model) and not result["pipeline"]["differs"]
    assert result["pipeline"]["accuracy"] == pytest.approx(accuracy(*crops(folder, 16, 8), 0.5, 0.25))
    assert (result["generator"]["mean"], result["generator"]["std"]) == ([0.5], [0.25])
    assert main([*argv, "--resize", "8", "--crop", "8"]) == 0
    text = capsys.readouterr().out
    assert f"{accuracy(*crops(folder, 16, 8), 0.5, 0.25):.4f} under the one the model records" in text
    # the folder holding both is refused: which model was meant cannot be told
    assert main(["inspect", "--model", str(tmp_path / "models"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "holds a torch model (config.json + weights.safetensors) and ONNX files (net.onnx)" in err
    assert "name the one you mean" in err


@pytest.mark.slow
def test_leakage_scores_through_the_recorded_pipeline_and_says_it(tmp_path, folder, capsys):
    """leakage --model predicted on raw .npz arrays too; its accuracy now follows the rule and names the pipeline."""
    model = save(tmp_path)
    x, y = crops(folder, 16, 8)
    np.savez(tmp_path / "test.npz", x=x, y=y)
    np.savez(tmp_path / "train.npz", x=crops(write_folder(tmp_path / "train", seed=1), 16, 8)[0], y=y)
    argv = ["leakage", "--model", str(model), "--quiet", "--json"]
    assert main([*argv, "--data", str(tmp_path / "test.npz"), "--train-data", str(tmp_path / "train.npz")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["accuracy"]["accuracy"] == pytest.approx(accuracy(x, y, 0.5, 0.25))
    assert out["pipeline"]["normalisation"] == "recorded"
    assert main([*argv, "--images", str(folder), "--train-images", str(tmp_path / "train"), "--resize", "16"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["pipeline"]["accuracy"] == pytest.approx(accuracy(x, y, 0.5, 0.25))
    assert out["pipeline"]["recorded_accuracy"] == pytest.approx(accuracy(*crops(folder, 8, 8), 0.5, 0.25))


def test_overfit_with_a_margin_pipeline_shows_the_recorded_accuracy(tmp_path, folder, capsys):
    """The issue's case: the model records no margin (resize 8, crop 8); the overfitting test needs one (--resize 16)."""
    model = save(tmp_path)
    argv = ["overfit", "--model", str(model), "--images", str(folder), "--quiet"]
    assert main(argv) == 2 and "make --resize at least --crop + 6" in capsys.readouterr().err
    assert main([*argv, "--resize", "16", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    zoomed, recorded = accuracy(*crops(folder, 16, 8), 0.5, 0.25), accuracy(*crops(folder, 8, 8), 0.5, 0.25)
    assert out["pipeline_choice"]["accuracy"] == pytest.approx(zoomed)
    assert out["pipeline_choice"]["recorded_accuracy"] == pytest.approx(recorded)
    assert main([*argv, "--resize", "16"]) == 0
    assert f"Accuracy {zoomed:.4f} under this pipeline, {recorded:.4f} under the one" in capsys.readouterr().out


def test_audit_command_takes_mean_and_std_for_arrays(tmp_path, folder, capsys):
    """fitaudit audit --data: --mean/--std replace the recorded normalisation (--resize stays an image-folder option)."""
    model = save(tmp_path)
    x, y = crops(folder, 16, 8)
    canvases, _ = crops(folder, 16, 16)
    np.savez(tmp_path / "test.npz", x=canvases, y=y, margin=4)
    argv = ["audit", "--model", str(model), "--data", str(tmp_path / "test.npz"), "--instruments", "overfit",
            "--out", str(tmp_path / "out"), "--quiet", "--json"]
    assert main([*argv, "--mean", "0", "--std", "1"]) == 0, capsys.readouterr().err
    subject = json.loads(capsys.readouterr().out)["subject"]
    assert subject["accuracy"] == pytest.approx(accuracy(x, y))
    assert subject["pipeline"]["recorded_accuracy"] == pytest.approx(accuracy(x, y, 0.5, 0.25))
    assert subject["pipeline"]["given"] == ["mean", "std"] and subject["pipeline"]["differs"]


def predictions(x, mean=0.0, std=1.0):
    """The brightness model's classes of ``x`` normalised by hand."""
    with torch.no_grad():
        return module()(torch.from_numpy((x - np.float32(mean)) / np.float32(std))).numpy().argmax(axis=1)


@pytest.mark.slow
def test_inspect_names_the_weakest_class_by_the_models_names(tmp_path, folder, capsys):
    """inspect --data .npz named its weakest class '0' though the model records class names."""
    model = save(tmp_path)
    x, y = crops(folder, 16, 8)
    np.savez(tmp_path / "test.npz", x=x, y=y)
    np.savez(tmp_path / "train.npz", x=crops(write_folder(tmp_path / "train", seed=1), 16, 8)[0], y=y)
    correct = predictions(x) == y  # --mean 0 --std 1: raw pixel values, some classes missed
    per_class = [float(np.mean(correct[y == k])) for k in range(len(CLASSES))]
    assert min(per_class) < max(per_class)
    weakest = CLASSES[int(np.argmin(per_class))]
    text = inspect_text(capsys, "--model", model, "--data", tmp_path / "test.npz", "--mean", "0", "--std", "1")
    assert f"Weakest class {weakest!r}: {min(per_class):.3f}" in text and "Weakest class '" + str(
        int(np.argmin(per_class))) not in text
    # with training arrays: the leakage search names classes alike, and a torch model recording a normalisation
    # gives its penultimate features of the normalised arrays (it stopped with "must be a torch model")
    out = inspect_json(capsys, "--model", model, "--data", tmp_path / "test.npz", "--train-data",
                       tmp_path / "train.npz")
    parts = {part["id"]: part for part in out["first_questions"]}
    assert parts["leakage-penult"]["verdict"]["status"] in ("pass", "fail", "inconclusive")  # it ran (a small set: low power)
    from fitaudit.leakage import penultimate_features
    from fitaudit.models import load_model

    adapter = load_model(model)
    wrapped = choose_normalisation([("m", RECORDED)], x).classifier(adapter)
    np.testing.assert_allclose(penultimate_features(wrapped, x),
                               penultimate_features(adapter, (x - np.float32(0.5)) / np.float32(0.25)), rtol=1e-6)


def test_a_saved_result_without_a_choice_still_says_its_pipeline_once():
    from fitaudit.report.pipelines import pipeline_lines

    settings = EvalPipeline(18, 12, (0.5,), (0.25,)).to_dict()
    assert pipeline_lines(None, settings=settings) == [
        "Pipeline: resize 18 (shorter side), centre crop 12, mean [0.5], std [0.25]."]
    assert pipeline_lines(None) == []


def test_an_accuracy_at_chance_without_a_normalisation_says_so(tmp_path, folder, capsys):
    """The chance-level stop named pipelines and channels, not that no normalisation was known (the likely cause).

    The model records no pipeline; on raw pixel values it calls both the dark
    and the mid images 'mid' (accuracy 0.5 = chance on two balanced
    classes); normalised by mean 0.5, std 0.25 it gets every one right.
    """
    model = save(tmp_path, pipeline=None)
    x, y = crops(folder, 16, 8)
    x, y = x[y < 2], y[y < 2]
    assert np.all(predictions(x) == 1) and np.all(predictions(x, 0.5, 0.25) == y)
    canvases = crops(folder, 16, 16)[0][crops(folder, 16, 16)[1] < 2]  # the same crops with a 4-pixel margin
    np.testing.assert_array_equal(canvases[:, :, 4:12, 4:12], x)
    np.savez(tmp_path / "test.npz", x=canvases, y=y, margin=4)
    np.savez(tmp_path / "crops.npz", x=x, y=y)  # leakage compares arrays as they are
    np.savez(tmp_path / "train.npz", x=x[::-1], y=y[::-1])
    data = ["--data", str(tmp_path / "test.npz")]
    for argv in (["inspect", "--model", str(model), *data],
                 ["leakage", "--model", str(model), "--data", str(tmp_path / "crops.npz"), "--train-data",
                  str(tmp_path / "train.npz")]):
        assert main([*argv, "--quiet"]) == 2, argv
        err = capsys.readouterr().err
        assert "at or below chance" in err and "No normalisation is known" in err, (argv, err)
    # the audit does not stop: its baseline part says what was measured, with the same likely cause
    assert main(["audit", "--model", str(model), *data, "--out", str(tmp_path / "out"), "--instruments", "overfit",
                 "--quiet"]) == 0
    capsys.readouterr()
    saved = {p["id"]: p for p in json.loads((tmp_path / "out" / "audit.json").read_text())["parts"]}
    baseline = saved["baseline"]["verdict"]
    assert baseline["numbers"]["at_chance"] and "at or below chance" in baseline["sentence"]
    assert "No normalisation is known" in baseline["sentence"]
    result = fitaudit.audit(str(model), str(tmp_path / "test.npz"), instruments=["overfit"], options=QUIET)
    assert result.part("baseline").verdict.numbers["at_chance"]
    assert "No normalisation is known" in result.part("baseline").sentence
    # given the mean and std, the same arrays score 1.0 and nothing stops
    out = inspect_json(capsys, "--model", model, *data, "--mean", "0.5", "--std", "0.25")
    assert out["accuracy"] == 1.0 and out["pipeline"]["normalisation"] == "given"


@pytest.mark.slow
def test_leakage_on_arrays_takes_mean_and_std_as_inspect_does(tmp_path, folder, capsys):
    """leakage --data refused --mean/--std ('goes with --images'): the arrays' normalisation now follows the rule."""
    model = save(tmp_path)
    x, y = crops(folder, 16, 8)
    np.savez(tmp_path / "test.npz", x=x, y=y)
    np.savez(tmp_path / "train.npz", x=crops(write_folder(tmp_path / "train", seed=1), 16, 8)[0], y=y)
    argv = ["leakage", "--data", str(tmp_path / "test.npz"), "--train-data", str(tmp_path / "train.npz"), "--quiet"]
    given = ["--mean", "0.4", "--std", "0.3"]
    assert main([*argv, "--model", str(model), *given, "--json"]) == 0, capsys.readouterr().err
    out = json.loads(capsys.readouterr().out)
    assert out["accuracy"]["accuracy"] == pytest.approx(accuracy(x, y, 0.4, 0.3))
    assert out["pipeline"]["given"] == ["mean", "std"] and out["pipeline"]["differs"]
    assert out["pipeline"]["recorded_accuracy"] == pytest.approx(accuracy(x, y, 0.5, 0.25))
    assert main([*argv, "--model", str(model), *given]) == 0
    text = capsys.readouterr().out
    assert (f"Accuracy {accuracy(x, y, 0.4, 0.3):.4f} under this pipeline, {accuracy(x, y, 0.5, 0.25):.4f} under "
            "the one the model records.") in text
    # the refusals of inspect and audit --data: a size option, values outside [0, 1], another channel count
    for extra, message in ((["--resize", "16"], "`--resize` goes with `--images`; it does nothing with `--data`."),
                           (["--mean", "0.5", "0.5", "0.5", "--std", "1", "1", "1"], "`--mean` must be 1 number, for a grey"),
                           ([], None)):
        if message is None:  # arrays already normalised, with the recorded normalisation: refused
            np.savez(tmp_path / "scaled.npz", x=x * 255, y=y)
            extra, message = ["--data", str(tmp_path / "scaled.npz")], "applies to pixel values in [0, 1]"
        assert main([*argv, "--model", str(model), *extra]) == 2
        assert message in capsys.readouterr().err
    # without a model nothing is scored: --mean/--std would do nothing
    assert main([*argv, *given]) == 2
    assert "`--mean`/`--std` normalise the arrays a model scores; they go with `--model`" in capsys.readouterr().err


def population_models(tmp_path, pipeline=RECORDED):
    """Two runs of the brightness model (the second's logits doubled: the same classes, other weights) and their
    table (no accuracies: they are computed on the data)."""
    from fitaudit.models import save_torch_model

    folder = tmp_path / "models"
    save(folder, pipeline=pipeline, name="a")
    doubled = module()
    with torch.no_grad():
        doubled[-1].weight.mul_(2.0)
        doubled[-1].bias.mul_(2.0)
    config = json.loads((folder / "a" / "config.json").read_text())
    save_torch_model(doubled, config, folder / "b")
    (tmp_path / "runs.csv").write_text("model,seed\na,0\nb,1\n")
    return folder


def pgdl_import(capsys, tmp_path, name, *argv, code=0):
    command = ["pgdl", "import", "--models", str(tmp_path / "models"), "--table", str(tmp_path / "runs.csv"),
               "--quiet", *map(str, argv)]
    assert main([*command, "--out", str(tmp_path / name), "--json"]) == code, capsys.readouterr().err
    if code:
        return capsys.readouterr().err
    out = json.loads(capsys.readouterr().out)
    assert main([*command, "--out", str(tmp_path / f"{name}-text")]) == 0
    return out, capsys.readouterr().out


def test_pgdl_import_says_its_pipeline_and_both_accuracies(tmp_path, folder, capsys):
    """pgdl import ignored the pipeline the models record and said nothing of the one it used."""
    population_models(tmp_path)
    train = write_folder(tmp_path / "train", seed=1)
    data = ["--train-data", train, "--test-data", folder]
    # the recorded pipeline, said; the population stores its normalised crops
    out, text = pgdl_import(capsys, tmp_path, "own", *data)
    assert out["pipeline"]["used"] == {**RECORDED, "channels": 1, "margin": 0}
    assert out["pipeline"]["recorded_by"] == str(tmp_path / "models" / "a")
    assert not out["pipeline"]["differs"] and out["recorded_metrics"] is None
    x, y = crops(folder, 8, 8)
    assert out["metrics"]["a"]["test_acc"] == pytest.approx(accuracy(x, y, 0.5, 0.25))
    stored = np.load(tmp_path / "own" / "test.npz")
    order = np.argsort([CLASSES[k] for k in y], kind="stable")  # the files by class folder name, then by name
    np.testing.assert_array_equal(stored["y"], y[order])
    np.testing.assert_allclose(stored["x"], (x[order] - np.float32(0.5)) / np.float32(0.25), atol=1e-6)
    assert "Pipeline: resize 8 (shorter side), centre crop 8, mean [0.5], std [0.25]; as " in text
    # another pipeline: each model's accuracy under both
    out, text = pgdl_import(capsys, tmp_path, "zoomed", *data, "--resize", 16)
    zoomed, own = accuracy(*crops(folder, 16, 8), 0.5, 0.25), accuracy(x, y, 0.5, 0.25)
    assert zoomed != own and out["pipeline"]["differs"] and out["pipeline"]["given"] == ["resize"]
    for run in ("a", "b"):
        assert out["metrics"][run]["test_acc"] == pytest.approx(zoomed)
        assert out["recorded_metrics"][run]["test_acc"] == pytest.approx(own)
        assert out["recorded_metrics"][run]["train_acc"] == pytest.approx(accuracy(*crops(train, 8, 8), 0.5, 0.25))
    assert f"Test accuracy {zoomed:.4f} under this pipeline, {own:.4f} under the one the models record" in text
    assert "--resize replacing the resize 8 (shorter side), centre crop 8" in text


@pytest.mark.slow
def test_pgdl_import_normalises_arrays_by_the_rule(tmp_path, folder, capsys):
    """.npz arrays get the recorded normalisation (--mean/--std over it, both accuracies); none known is said."""
    population_models(tmp_path)
    x, y = crops(folder, 16, 8)
    np.savez(tmp_path / "test.npz", x=x, y=y)
    np.savez(tmp_path / "train.npz", x=crops(write_folder(tmp_path / "train", seed=1), 16, 8)[0], y=y)
    data = ["--train-data", tmp_path / "train.npz", "--test-data", tmp_path / "test.npz"]
    out, text = pgdl_import(capsys, tmp_path, "npz", *data)
    assert out["metrics"]["a"]["test_acc"] == pytest.approx(accuracy(x, y, 0.5, 0.25))
    assert out["pipeline"]["normalisation"] == "recorded" and out["pipeline"]["arrays"]
    assert "Normalisation of the arrays: mean [0.5], std [0.25]; as " in text
    out, text = pgdl_import(capsys, tmp_path, "given", *data, "--mean", 0, "--std", 1)
    assert out["metrics"]["b"]["test_acc"] == pytest.approx(accuracy(x, y))
    assert out["recorded_metrics"]["b"]["test_acc"] == pytest.approx(accuracy(x, y, 0.5, 0.25))
    assert (f"Test accuracy {accuracy(x, y):.4f} under this pipeline, {accuracy(x, y, 0.5, 0.25):.4f} under the one "
            "the models record") in text
    assert "`--resize`/`--crop` go with image folders" in pgdl_import(capsys, tmp_path, "sized", *data, "--resize", 8,
                                                                       code=2)
    # models recording no normalisation: said
    for run in ("a", "b"):
        config = tmp_path / "models" / run / "config.json"
        config.write_text(json.dumps({k: v for k, v in json.loads(config.read_text()).items() if k != "pipeline"}))
    out, text = pgdl_import(capsys, tmp_path, "bare", *data)
    assert out["pipeline"]["normalisation"] == "none" and out["metrics"]["a"]["test_acc"] == pytest.approx(
        accuracy(x, y))
    assert "No normalisation known" in text


def test_inspect_model_follows_the_rule_on_arrays(tmp_path, folder):
    """fitaudit.models.inspect_model scored .npz image arrays on raw pixel values, whatever the model recorded."""
    from fitaudit.models.inspection import inspect_model

    model = save(tmp_path)
    x, y = crops(folder, 16, 8)
    np.savez(tmp_path / "test.npz", x=x, y=y)
    result = inspect_model(model, tmp_path / "test.npz")
    assert result.accuracy == pytest.approx(accuracy(x, y, 0.5, 0.25)) != pytest.approx(accuracy(x, y))
    assert result.pipeline["normalisation"] == "recorded" and result.pipeline["recorded_accuracy"] is None
    given = inspect_model(model, tmp_path / "test.npz", pipeline={"mean": [0.0], "std": [1.0]})
    assert given.accuracy == pytest.approx(accuracy(x, y))
    assert given.pipeline["recorded_accuracy"] == pytest.approx(accuracy(x, y, 0.5, 0.25))
    bare = save(tmp_path, pipeline=None, name="bare")
    np.savez(tmp_path / "two.npz", x=x[y < 2], y=y[y < 2])  # at chance on raw pixels (see the test above)
    with pytest.raises(fitaudit.InputError, match="at or below chance.*No normalisation is known"):
        inspect_model(bare, tmp_path / "two.npz")
