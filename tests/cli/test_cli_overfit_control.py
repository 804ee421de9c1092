"""``fitaudit overfit --train-data`` / ``--train-images``: the audit's control of the test's power (issue 50, item 2).

A world where the answer is known: canvases of noise around one of three
brightness levels (the class; shifting keeps their distribution, so (G3)
holds), 40% of the training labels redrawn at random. An MLP fitted to its
training crops memorises those labels at their pixel positions: shifting
its training images breaks the memory, so the test rejects them (the
control has power) and the pass on unseen canvases stands. The same MLP
trained on random crops (every offset of the margin) learns the brightness
wherever it sits and none of the redrawn labels: the shifts lie inside its
augmentation and change none of its answers, the test cannot reject even
its training data, and without the control nothing would show that the
test is blind to this model; with it, the pass becomes ``inconclusive``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fitaudit.cli import main

torch = pytest.importorskip("torch")

SIDE, MARGIN, N_CLASSES = 6, 3, 3


def world(m: int, seed: int, noise: float) -> tuple[np.ndarray, np.ndarray]:
    """Canvases (m, 2, 12, 12) of noise about the class's grey level; ``noise``: share of labels redrawn."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, N_CLASSES, m)
    level = np.array([0.2, 0.5, 0.8])[y][:, None, None, None]
    size = SIDE + 2 * MARGIN
    x = np.clip(level + rng.normal(0.0, 0.12, (m, 2, size, size)), 0.0, 1.0).astype(np.float32)
    return x, np.where(rng.random(m) < noise, rng.integers(0, N_CLASSES, m), y)


def fitted_mlp(x: np.ndarray, y: np.ndarray, folder: Path, *, random_crops: bool) -> Path:
    """An MLP fitted to the centre crops of ``x`` (or, with ``random_crops``, to a crop at a random offset of
    the whole margin each step), saved as a torch model folder."""
    from fitaudit.models import save_torch_model
    from fitaudit.models.architectures import build_architecture

    config = {"architecture": "mlp", "n_classes": N_CLASSES,
              "kwargs": {"in_features": 2 * SIDE * SIDE, "hidden_sizes": [128], "n_classes": N_CLASSES}}
    torch.manual_seed(0)
    net = build_architecture(config)
    canvases, targets = torch.from_numpy(x), torch.from_numpy(y)
    optimiser = torch.optim.Adam(net.parameters(), lr=0.01)
    rng = np.random.default_rng(0)
    for _ in range(1500 if random_crops else 600):
        dy, dx = rng.integers(-MARGIN, MARGIN + 1, 2) if random_crops else (0, 0)
        crops = canvases[:, :, MARGIN + dy : MARGIN + dy + SIDE, MARGIN + dx : MARGIN + dx + SIDE]
        optimiser.zero_grad()
        torch.nn.functional.cross_entropy(net(crops), targets).backward()
        optimiser.step()
    return save_torch_model(net.eval(), config, folder)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("control")
    (x_train, y_train), (x_test, y_test) = world(300, 0, 0.4), world(300, 1, 0.0)
    np.savez(root / "train.npz", x=x_train, y=y_train)
    np.savez(root / "test.npz", x=x_test, y=y_test)
    np.savez(root / "small.npz", x=x_train[:, :, 1:-1, 1:-1], y=y_train)
    np.savez(root / "labels.npz", x=x_train, y=y_train + 1)
    return {"train": root / "train.npz", "test": root / "test.npz", "small": root / "small.npz",
            "labels": root / "labels.npz",
            "memoriser": fitted_mlp(x_train, y_train, root / "memoriser", random_crops=False),
            "augmented": fitted_mlp(x_train, y_train, root / "augmented", random_crops=True)}


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def overfit(capsys: pytest.CaptureFixture[str], files: dict[str, Path], model: str, *extra: object,
            as_json: bool = True) -> dict | str:
    code, out, err = run(capsys, "overfit", "--model", files[model], "--data", files["test"], "--eps", 1,
                         "--margin", MARGIN, "--quiet", *extra, *(["--json"] if as_json else []))
    assert code == 0, err
    return json.loads(out) if as_json else out


@pytest.mark.slow
def test_the_control_rejects_the_memoriser_and_its_pass_stands(files, capsys) -> None:
    result = overfit(capsys, files, "memoriser", "--train-data", files["train"])
    control, verdict = result["control"], result["verdict"]
    assert control["type"] == "OverfitTestResult" and control["m"] == 300 and result["control_source"] == str(
        files["train"])
    assert control["reject"] and control["pvalue"] < 1e-3 and control["risk_plain"] < 0.05  # it fits its labels
    assert (verdict["status"], verdict["reason"]) == ("pass", "control_rejected")
    assert verdict["numbers"]["control_pvalue"] == control["pvalue"] and verdict["numbers"]["control_m"] == 300
    assert "and the test rejects the model's training data" in verdict["sentence"]
    assert "and the test had power" in verdict["sentence"]
    # the same test as the library runs on the training canvases
    from fitaudit.data.io import load_npz
    from fitaudit.models import load_model
    from fitaudit.overfit import TranslationAEG, overfit_test

    x, y = load_npz(files["train"], image=True)
    expected = overfit_test(load_model(files["memoriser"]), x, y, TranslationAEG(eps=1, margin=MARGIN))
    assert control["pvalue"] == pytest.approx(expected.pvalue, rel=1e-12, abs=1e-15)
    text = overfit(capsys, files, "memoriser", "--train-data", files["train"], as_json=False)
    assert text.splitlines()[0].startswith("Passes: no dependence on this data shown") and "m = 300 images" in text
    assert "and the test rejects the model's training data" in text.splitlines()[0]  # the headline, then details
    assert text.splitlines()[1].startswith("Not fitted to this data in a way the shifts reveal")
    assert "and the test had power" in text.splitlines()[1]
    line = next(li for li in text.splitlines() if li.startswith("Control on the training data"))
    assert f"({files['train']}; m = 300, error R_S" in line and "Dependent on its training data, as it should be" in line


@pytest.mark.slow
def test_without_the_control_a_pass_says_what_hides_from_it(files, capsys) -> None:
    result = overfit(capsys, files, "memoriser")
    verdict = result["verdict"]
    assert result["control"] is None and verdict["status"] == "pass"
    sentence = verdict["sentence"]
    first = sentence.split(". ")[0]  # the headline says first what hides overfitting from the test
    assert "but training on random crops or shifts would hide it" in first
    assert "training on random crops or shifts hides overfitting from this test" in sentence
    assert "risk estimate" not in sentence and "--train-data or --train-images" in sentence
    assert "control_pvalue" not in verdict["numbers"]


@pytest.mark.slow
def test_a_model_trained_on_random_crops_escapes_the_test_and_the_control_says_so(files, capsys) -> None:
    """The augmentation covers the shifts, so not even its own training data are rejected."""
    alone = overfit(capsys, files, "augmented")
    assert "risk estimate" not in alone["verdict"]["sentence"]
    result = overfit(capsys, files, "augmented", "--train-data", files["train"])
    control, verdict = result["control"], result["verdict"]
    assert not control["reject"] and control["pvalue"] >= 0.05
    # it errs exactly on the redrawn labels that are not the class (the draws of world() do not depend on noise)
    assert control["risk_plain"] == pytest.approx(np.mean(world(300, 0, 0.4)[1] != world(300, 0, 0.0)[1]))
    assert control["n_success"] == 0
    assert (verdict["status"], verdict["reason"]) == ("inconclusive", "control_not_rejected")
    assert "does not reject even the model's training data" in verdict["sentence"]
    assert "training on random crops or shifts, for one, hides overfitting from it" in verdict["sentence"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--train-data", "small"], r"`--train-data` holds canvases of shape \(2, 10, 10\), but `--data` holds"),
        (["--train-data", "labels"], r"--train-data\['y'\] for model .* holds label 3 but the model has 3 classes"),
        (["--train-images", "train"], "`--train-images` goes with `--images`; it does nothing with `--data`"),
        (["--train-data", "train", "--models", "augmented"], "`--train-data` goes with one `--model`"),
        (["--train-data", "nowhere"], "`--train-data`: file .* does not exist"),
    ],
)
def test_bad_training_data(files, capsys, extra, message) -> None:
    extra = [str(files.get(e, e)) if e not in ("--train-data", "--train-images", "--models") else e for e in extra]
    code, _, err = run(capsys, "overfit", "--model", files["memoriser"], "--data", files["test"], "--eps", 1,
                       "--margin", MARGIN, "--quiet", *extra)
    import re

    assert code == 2 and re.search(message, err), err


def test_training_images_beside_an_image_folder(tmp_path: Path, capsys) -> None:
    """``--train-images`` goes through the same pipeline as ``--images``; ``--train-data`` does not go with it."""
    Image = pytest.importorskip("PIL.Image")
    from fitaudit.models import save_torch_model
    from fitaudit.models.architectures import build_architecture

    rng = np.random.default_rng(0)
    for split in ("train", "test"):
        for label, level in enumerate((50, 130, 210)):
            (tmp_path / split / f"c{label}").mkdir(parents=True)
            for i in range(6):
                pixels = np.clip(level + rng.normal(0, 25, (18, 18)), 0, 255).astype(np.uint8)
                Image.fromarray(pixels).save(tmp_path / split / f"c{label}" / f"{i}.png")
    config = {"architecture": "mlp", "n_classes": 3, "pipeline": {"resize": 18, "crop": 12, "channels": 1},
              "kwargs": {"in_features": 144, "hidden_sizes": [], "n_classes": 3}}
    torch.manual_seed(0)
    model = save_torch_model(build_architecture(config), config, tmp_path / "m")
    base = ["overfit", "--model", model, "--images", tmp_path / "test", "--quiet"]
    code, out, err = run(capsys, *base, "--train-images", tmp_path / "train", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["control"]["m"] == 18 and result["control_source"] == str(tmp_path / "train")
    assert result["control"]["g3"] is not None  # checked on the training images as on the scored ones
    code, _, err = run(capsys, *base, "--train-data", tmp_path / "x.npz")
    assert code == 2 and "`--train-data` goes with `--data`; with `--images`, give the training images as " \
                         "`--train-images`" in err
    code, _, err = run(capsys, *base, "--train-images", tmp_path / "nowhere")
    assert code == 2 and "--train-images" in err
