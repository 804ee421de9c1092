"""The (G3) check cannot be talked past by a change of pipeline: centred digits at every --resize, scattered ones.

Issue 50, item 4 (done when: "upsampled centred digits at every --resize
from 32 to 48 are inconclusive; scattered digits still pass it").
scikit-learn's 1,797 digits (8 x 8, centred by construction), upsampled
(bilinear) to 32 px and saved as PNG files, are scored by ``fitaudit
overfit`` with a linear softmax model trained on them under its own
pipeline (resize 32, centre crop 26: P = 3, eps = 1), at every ``--resize``
from 32 to 48 (eps = floor(P / 3), the command's default). Each row gives
the verdict, the G3 check's held-out accuracy and exact binomial p-value
(Werpachowski et al. 2019 need (G3); the check is a classifier two-sample
test, Lopez-Paz & Oquab 2017), and the model's accuracy under the pipeline
used against its own. Then the same digits upsampled to 16 px at uniformly
random places in 54-px images (resize 54, crop 48, eps 1), 10 placements:
the check must not reject more often than its level says.

Printed and written to ``results/overfit_g3_resize.txt``.
Run: ``python benchmarks/validity/overfit_g3_resize.py`` (a few minutes).
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results"
SIDE, CROP = 32, 26


def centred_digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's digits as uint8 grey images upsampled (bilinear) to 32 x 32, and their labels."""
    from PIL import Image
    from sklearn.datasets import load_digits

    bunch = load_digits()
    small = np.rint(bunch.images * (255 / 16)).astype(np.uint8)
    big = np.stack(
        [
            np.asarray(Image.fromarray(d).resize((SIDE, SIDE), Image.Resampling.BILINEAR))
            for d in small
        ]
    )
    return big, bunch.target.astype(np.int64)


def scattered_digits(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The digits upsampled to 16 px at uniformly random places in a 54-px image (inside its 48-px centre crop)."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    rng = np.random.default_rng(seed)
    small = np.kron(np.rint(bunch.images * (255 / 16)), np.ones((2, 2))).astype(np.uint8)
    images = np.zeros((len(small), 54, 54), dtype=np.uint8)
    for image, digit, (row, col) in zip(
        images, small, rng.integers(6, 54 - 16 - 6 + 1, (len(small), 2))
    ):
        image[row : row + 16, col : col + 16] = digit
    return images, bunch.target.astype(np.int64)


def write_folder(root: Path, images: np.ndarray, labels: np.ndarray) -> Path:
    """One PNG file per image, in one folder per label."""
    from PIL import Image

    for label in np.unique(labels):
        (root / str(label)).mkdir(parents=True)
    for i, (image, label) in enumerate(zip(images, labels)):
        Image.fromarray(image).save(root / str(label) / f"{i:04d}.png")
    return root


def train_model(folder: Path, out: Path) -> Path:
    """A linear softmax model on the 26-px crops of its own pipeline (resize 32), saved with that pipeline."""
    import torch

    from fitaudit.data.images import open_images
    from fitaudit.data.pipeline import EvalPipeline
    from fitaudit.models import save_torch_model
    from fitaudit.models.architectures import build_architecture

    pipeline = EvalPipeline(resize=SIDE, crop=CROP, channels=1)
    dataset = open_images(folder)
    x = np.concatenate([b.images for b in dataset.batches(pipeline, kind="input", batch_size=512)])
    config = {
        "architecture": "mlp",
        "kwargs": {"in_features": CROP * CROP, "hidden_sizes": [], "n_classes": 10},
        "n_classes": 10,
        "pipeline": {"resize": SIDE, "crop": CROP, "channels": 1},
    }
    torch.manual_seed(0)
    module = build_architecture(config)
    inputs, targets = torch.from_numpy(x), torch.from_numpy(np.asarray(dataset.labels))
    optimiser = torch.optim.Adam(module.parameters(), lr=0.01)
    for _ in range(150):
        optimiser.zero_grad()
        torch.nn.functional.cross_entropy(module(inputs), targets).backward()
        optimiser.step()
    return save_torch_model(module.eval(), config, out)


def overfit_json(*argv: object) -> dict:
    """``fitaudit overfit ... --json`` as a user runs it."""
    from fitaudit.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["overfit", *(str(a) for a in argv), "--quiet", "--json"])
    if code != 0:
        raise RuntimeError(f"fitaudit overfit exited {code}")
    return json.loads(out.getvalue())


def main() -> None:
    from fitaudit.data.images import open_images
    from fitaudit.data.pipeline import EvalPipeline
    from fitaudit.overfit.images import ImageAEGSettings, images_g3

    lines = [
        "Centred digits (scikit-learn's 1,797, upsampled to 32 px, PNG), `fitaudit overfit` with a linear model "
        "trained under resize 32 / crop 26, at every --resize (crop 26, eps = floor(P / 3)):",
        "",
        f"{'resize':>6} {'P':>2} {'eps':>3} {'verdict':<28} {'G3 acc':>6} {'G3 p':>9} {'test p':>7} "
        f"{'acc used':>8} {'acc own':>7} {'accuracy moved':>14}",
    ]
    inconclusive = 0
    with tempfile.TemporaryDirectory() as root:
        folder = write_folder(Path(root) / "centred", *centred_digits())
        model = train_model(folder, Path(root) / "model")
        for resize in range(32, 49):
            result = overfit_json("--model", model, "--images", folder, "--resize", resize)
            verdict, g3 = result["verdict"], result["test"]["g3"]
            numbers = verdict["numbers"]
            margin = (resize - CROP) // 2
            inconclusive += (
                verdict["status"] == "inconclusive" and verdict["reason"] == "g3_violated"
            )
            moved = numbers.get("pipeline_changes_accuracy")
            lines.append(
                f"{resize:>6} {margin:>2} {margin // 3:>3} {verdict['status'] + ' (' + verdict['reason'] + ')':<28} "
                f"{g3['accuracy']:>6.3f} {g3['pvalue']:>9.2g} {result['test']['pvalue']:>7.2g} "
                f"{numbers.get('pipeline_accuracy', float('nan')):>8.3f} "
                f"{numbers.get('recorded_accuracy', float('nan')):>7.3f} "
                f"{'-' if moved is None else 'yes' if moved else 'no':>14}"
            )
        lines += [
            "",
            f"inconclusive (g3_violated) at {inconclusive} of 17 resizes",
            "",
            "Scattered digits (16 px at uniformly random places in 54-px images, resize 54, crop 48, eps 1), "
            "the G3 check alone, 10 placements:",
            "",
            f"{'seed':>4} {'G3 acc':>6} {'G3 p':>7} {'violated':>8}",
        ]
        violated = 0
        for seed in range(10):
            scattered = write_folder(Path(root) / f"scattered-{seed}", *scattered_digits(seed))
            pipeline = EvalPipeline(resize=54, crop=48, channels=1)
            check = images_g3(open_images(scattered), ImageAEGSettings(pipeline=pipeline, eps=1))
            violated += check.violated
            lines.append(
                f"{seed:>4} {check.accuracy:>6.3f} {check.pvalue:>7.3f} {str(check.violated):>8}"
            )
        lines += [
            "",
            f"violated in {violated} of 10 (a check at level 0.05 where G3 holds: about 1 in 20 expected)",
        ]
    text = "\n".join(lines)
    print(text)
    (RESULTS / "overfit_g3_resize.txt").write_text(text + "\n")


if __name__ == "__main__":
    main()
