"""``fitaudit examine`` on the Shapes scenario with a tiny trained CNN."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fitaudit.cli import main

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from fitaudit.data.shapes import make_dataset
    from fitaudit.models.training import train_classifier

    data = make_dataset(4, 4, classes=["sphere", "cube"], image_size=16, random_state=0)
    folder = tmp_path_factory.mktemp("model")
    train_classifier(data.images, data.labels, architecture="shapes_alexnet", kwargs={"width": 4}, epochs=1,
                     checkpoint_dir=folder, progress=False, metadata={"class_names": data.class_names})
    return folder / "model"


def _run(capsys, argv):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.slow
def test_json_result_and_files(model_dir, tmp_path, capsys):
    out = tmp_path / "out"
    code, stdout, _ = _run(capsys, ["examine", "--model", str(model_dir), "--examiner", "random", "--steps", "3",
                                    "--instances", "3", "--out", str(out), "--json", "--quiet"])
    assert code == 0
    result = json.loads(stdout)
    assert result["type"] == "ExaminationResult" and result["steps"] == 3
    assert len(result["final_loss"]) == 3 and result["class_names"] == ["sphere", "cube"]
    assert result["n_model_queries"] == 9 and result["queries"] == {}
    assert sorted(np.bincount(result["labels"])) == [1, 2]  # taken class by class
    check = result["space_check"]  # the model's own test renders vs the examined space's random queries
    assert check["reference"] == "32 test renders of its training distribution" and check["n_random"] == 3 * 32
    assert check["foreign"] == (check["clean_accuracy"] - check["random_accuracy"] > check["threshold"])
    for name in ("examination.json", "queries.npz", "summary.md", "curves.png", "histograms.png", "worst-inputs.png"):
        assert (out / name).is_file(), name
    with np.load(out / "queries.npz") as queries:
        assert len(queries["loss"]) == 9 and "camera_elevation" in queries.files


@pytest.mark.slow
def test_human_summary_and_resume(model_dir, tmp_path, capsys):
    argv = ["examine", "--model", str(model_dir), "--examiner", "random", "--steps", "4", "--instances", "2",
            "--out", str(tmp_path), "--range", "camera_elevation=-10,10", "--range", "sun_azimuth=90", "--quiet"]
    code, stdout, _ = _run(capsys, argv)
    assert code == 0
    assert "Average true-class probability at step T" in stdout and "worst case found" in stdout
    first = json.loads((tmp_path / "examination.json").read_text())
    assert first["factor_space"]["sun_azimuth"]["low"] == 90.0
    code, _, _ = _run(capsys, argv)  # resumes from the checkpoints: same numbers
    assert json.loads((tmp_path / "examination.json").read_text())["final_loss"] == first["final_loss"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--steps", "0"], "`--steps` must be a positive integer; got 0."),
        (["--range", "camera_elevation=30,-30"], "`ranges['camera_elevation']` is inverted"),
        (["--range", "zoom=1,2"], "`ranges` names unknown factor(s) zoom"),
        (["--range", "camera_elevation"], "`--range` must look like NAME=LOW:HIGH or NAME=VALUE"),
        (["--examiner", "annealing"], "`--examiner` must be one of"),
        (["--scenario", "mnist"], "`--scenario` must be one of shapes"),
        (["--instances", "0"], "`--instances` must be a positive integer"),
        # the model records its class names: --classes must repeat them (another order would mislabel every render)
        (["--classes", "sphere,cube,torus"], "`--classes` sphere,cube,torus contradicts the class names the model records"),
        (["--classes", "cube,sphere"], "`--classes` cube,sphere contradicts the class names the model records, "
                                       "in its label order: sphere,cube."),
        (["--image-size", "32"], "`--image-size` 32 contradicts the model's recorded input size 16"),
        (["--images", "x", "--image-size", "16"], "`--image-size` is the Shapes scenario's render size"),
        (["--examiner", "bo", "--queries-per-step", "4"], "`--queries-per-step` works with the rl, random, grid examiners; 'bo'"),
        (["--images", "x", "--scenario", "shapes"], "`--images` and `--scenario` exclude each other"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(model_dir, tmp_path, capsys, extra, message):
    argv = ["examine", "--model", str(model_dir), "--examiner", "random", "--steps", "2", "--instances", "3",
            "--out", str(tmp_path), "--quiet", *extra]
    code, stdout, stderr = _run(capsys, argv)
    assert code == 2 and stdout == ""
    assert message in stderr and len(stderr.strip().splitlines()) == 1


def test_missing_model_file(tmp_path, capsys):
    code, _, stderr = _run(capsys, ["examine", "--model", str(tmp_path / "none.onnx"), "--out", str(tmp_path)])
    assert code == 2 and stderr.startswith("fitaudit: error:")


@pytest.mark.slow
def test_reproduce_examiner_variants_quick(tmp_path, capsys):
    out = tmp_path / "out"
    code, stdout, _ = _run(capsys, ["reproduce", "examiner-variants", "--quick", "--out", str(out),
                                    "--models-dir", str(tmp_path / "models"), "--quiet"])
    assert code == 0
    assert "examiner-variants (quick mode):" in stdout and "RL factor order" in stdout
    for suffix in ("json", "md", "png"):
        assert (out / f"examiner-variants-quick.{suffix}").is_file()
    assert any((tmp_path / "models").iterdir())


def test_help_states_the_default_examiner(capsys):
    assert main(["examine", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "The default examiner is 'bo'" in text and "bo (default)" in text


@pytest.mark.slow
def test_queries_per_step_sets_the_rl_batch(model_dir, tmp_path, capsys):
    code, stdout, stderr = _run(capsys, ["examine", "--model", str(model_dir), "--examiner", "rl", "--steps", "2",
                                         "--instances", "2", "--queries-per-step", "3", "--out", str(tmp_path),
                                         "--json", "--quiet"])
    assert code == 0, stderr
    result = json.loads(stdout)
    assert result["queries_per_step"] == 3 and result["n_model_queries"] == 2 * 2 * 3


# ------------------------------------------------------------------ a user's own images


@pytest.fixture(scope="module")
def image_model(tmp_path_factory):
    """A tiny CNN trained on 16 px Shapes renders, and those renders as a PNG folder root/<class>/<file>."""
    from PIL import Image

    from fitaudit.data.shapes import make_dataset
    from fitaudit.models.training import train_classifier

    data = make_dataset(4, 4, classes=["sphere", "cube"], image_size=16, random_state=0)
    folder = tmp_path_factory.mktemp("image-model")
    train_classifier(data.images, data.labels, architecture="shapes_alexnet", kwargs={"width": 4}, epochs=6,
                     checkpoint_dir=folder, progress=False, metadata={"class_names": data.class_names})
    root = folder / "images"
    for i, (image, label) in enumerate(zip(data.images, data.labels)):
        target = root / data.class_names[label]
        target.mkdir(parents=True, exist_ok=True)
        pixels = np.round(np.moveaxis(image, 0, -1) * 255).astype(np.uint8)
        Image.fromarray(pixels).save(target / f"{i:03d}.png")
    return folder / "model", root


@pytest.mark.slow
def test_images_json_result_and_files(image_model, tmp_path, capsys):
    model, root = image_model
    out = tmp_path / "out"
    argv = ["examine", "--model", str(model), "--images", str(root), "--resize", "20", "--crop", "16",
            "--examiner", "random", "--steps", "6", "--instances", "4", "--factor", "rotation=-15:15",
            "--factor", "blur=0", "--out", str(out), "--json", "--quiet"]
    code, stdout, stderr = _run(capsys, argv)
    assert code == 0, stderr
    result = json.loads(stdout)
    assert result["generator"]["generator"] == "ImageTransformGenerator"
    assert result["generator"]["border"] == "canvas" and result["generator"]["padding"] == 2
    space = result["factor_space"]
    assert (space["rotation"]["low"], space["rotation"]["high"]) == (-15.0, 15.0)
    assert space["blur"]["low"] == space["blur"]["high"] == 0.0
    assert result["class_names"] == ["sphere", "cube"]  # the model's order, not the folders' sorted order
    assert sorted(np.bincount(result["labels"], minlength=2)) == [2, 2]  # several per class
    check = result["space_check"]
    assert 0 <= check["random_accuracy"] <= 1 and 0 < check["clean_accuracy"] <= 1
    # the images were screened factor by factor: foreign where one alone, far from its default, costs more than half
    assert check["foreign"] == any(not row["left_out"] and row["drop"] > check["factor_threshold"]
                                   for row in check["factors_alone"])
    assert {row["factor"] for row in check["factors_alone"]} >= {"rotation", "flip", "jpeg_quality"}
    profile = result["sensitivity"]
    assert profile["n_queries"] == 4 * 32 and "rotation" in profile["factors"] and "blur" not in profile["factors"]
    for name in ("examination.json", "queries.npz", "summary.md", "curves.png", "histograms.png",
                 "worst-inputs.png", "worst-vs-original.png", "tsne.png", "sensitivity.png"):
        assert (out / name).is_file(), name
    assert "Files:" in stderr
    summary = (out / "summary.md").read_text()
    assert "### Sensitivity profile" in summary and "| rotation | [-15, 15] |" in summary
    with np.load(out / "queries.npz") as queries:
        assert "rotation" in queries.files and len(queries["loss"]) == 4 * 6


@pytest.mark.slow
def test_images_human_summary(image_model, tmp_path, capsys):
    """--examiner grid grids exactly the factors left free (here rotation and the translations), or refuses."""
    from fitaudit.data.transforms import image_factor_space

    model, root = image_model
    argv = ["examine", "--model", str(model), "--images", str(root), "--examiner", "grid", "--queries-per-step", "25",
            "--steps", "2", "--instances", "2", "--out", str(tmp_path), "--quiet"]
    code, _, stderr = _run(capsys, argv)
    assert code == 2 and "grid over the 14 free factors" in stderr and "--factor NAME=VALUE" in stderr
    assert "Traceback" not in stderr
    fixed = [f"--factor={f.name}={f.default:g}" for f in image_factor_space().factors
             if f.name not in ("rotation", "translation_x", "translation_y")]
    code, stdout, stderr = _run(capsys, [*argv, *fixed, "--json"])
    assert code == 0, stderr
    result = json.loads(stdout)
    assert result["n_model_queries"] == 100 and result["examiner"] == "grid"
    queries = np.load(tmp_path / "queries.npz")
    assert len(np.unique(queries["rotation"])) > 1 and len(np.unique(queries["translation_x"])) > 1
    assert len(np.unique(queries["scale"])) == 1 and len(np.unique(queries["noise"])) == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--factor", "zoom=1:2"], "`--factor` names unknown factor 'zoom'"),
        (["--factor", "rotation=20:-20"], "`--factor` rotation: the range is inverted (low 20 > high -20)"),
        (["--factor", "scale=0.1:1"], "`--factor` scale: (0.1, 1) is outside the allowed range [0.25, 4]"),
        (["--factor", "rotation"], "`--factor` must look like NAME=LOW:HIGH or NAME=VALUE"),
        (["--crop", "12", "--resize", "12"], "`--images`: the model's input height is 16 px but the images give 12 px"),
        (["--range", "rotation=1,2"], "`--range` is for scenarios"),
    ],
)
def test_images_bad_input_is_one_line_and_exit_2(image_model, tmp_path, capsys, extra, message):
    model, root = image_model
    argv = ["examine", "--model", str(model), "--images", str(root), "--examiner", "random", "--steps", "2",
            "--instances", "2", "--out", str(tmp_path), "--quiet", *extra]
    code, stdout, stderr = _run(capsys, argv)
    assert code == 2 and stdout == "", stderr
    assert message in stderr and len(stderr.strip().splitlines()) == 1


def test_images_of_a_class_the_model_cannot_output(image_model, tmp_path, capsys):
    import shutil

    model, root = image_model
    folder = tmp_path / "images"
    shutil.copytree(root, folder)
    shutil.copytree(root / "cube", folder / "torus")
    code, _, stderr = _run(capsys, ["examine", "--model", str(model), "--images", str(folder), "--steps", "2",
                                    "--out", str(tmp_path / "out"), "--quiet"])
    assert code == 2 and "`--images`" in stderr and "torus" in stderr
