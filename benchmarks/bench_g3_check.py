"""Cost of the overfitting test's (G3) check against the test's own time.

The translational test (Werpachowski et al., NeurIPS 2019, Sec. 5) now
checks (G3) on the scored images first (:func:`fitaudit.overfit.g3.check_g3`,
a classifier two-sample test on at most 2,000 images). Target: the check
costs at most 20% of the test it guards.

Side by side, per setting: the wall seconds of :func:`fitaudit.overfit.overfit_test`
without the check (clean predictions, strongest AEG, pairwise and CI tests)
and of the check alone on the same canvases, and their ratio. Models are
the Shapes reference CNN ``shapes_alexnet`` (untrained, eval mode, torch
backend: the cost does not depend on the weights; labels are its own
predictions with 10% changed so that some examples are wrong); eps = 1 is
the cheapest test (at most 25 crops scored per image), so the worst ratio.
Both are timed warm: the one-off imports of the first call in a process
(scikit-learn, scipy.stats; tens of seconds on a loaded machine) are run
before the clock starts.

Last, the same on an image folder (PNG files of the centred digits,
resize 34, crop 28: P = 3, eps = 1): :func:`fitaudit.overfit.overfit_test_images`
without the check beside the check alone on the folder (:func:`fitaudit.overfit.images.images_g3`,
which decodes its images a second time).

Run: ``python benchmarks/bench_g3_check.py [--m 1000]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent / "validity"))

from worlds import mnist, place  # noqa: E402

from fitaudit.overfit import TranslationAEG, centre_crop, overfit_test  # noqa: E402
from fitaudit.overfit.g3 import check_g3  # noqa: E402


def cnn(width: int, n_classes: int) -> Any:
    """An untrained ``shapes_alexnet`` in eval mode."""
    import torch

    from fitaudit.models.architectures import build_architecture

    torch.manual_seed(0)
    config = {"architecture": "shapes_alexnet", "kwargs": {"n_classes": n_classes, "width": width}}
    return build_architecture(config).eval()


def settings(m: int) -> list[tuple[str, np.ndarray, int, int]]:
    """(name, canvases, margin, eps) of each setting."""
    from fitaudit.data.shapes.datasets import FreePositionLayout, make_free_position_dataset

    digits, _ = mnist()
    centred = np.repeat(place(digits[:m], crop=28, margin=3, layout="centred"), 3, axis=1)
    shapes = {}
    for eps in (1, 2):
        layout = FreePositionLayout(crop_size=32, margin=3 * eps, object_size=20)
        shapes[eps] = make_free_position_dataset(-(-m // 12), 1, layout=layout, split="test").canvases[:m]
    return [("MNIST centred 28, eps 1", centred, 3, 1), ("Shapes free 32, eps 1", shapes[1], 3, 1),
            ("Shapes free 32, eps 2", shapes[2], 6, 2)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, default=1000, help="images per setting (default 1000)")
    args = parser.parse_args()
    from fitaudit.models import as_classifier

    # warm: the first call of each imports its libraries (scikit-learn, scipy.stats), a one-off per process
    for _name, canvases, margin, eps in settings(16)[:1]:
        model = as_classifier(cnn(12, 12), backend="torch")
        y = model.predict(centre_crop(canvases, margin))
        overfit_test(model, canvases, y, TranslationAEG(eps=eps, margin=margin), check_density=False)
        check_g3(canvases, margin=margin, eps=eps)
    print(f"{'setting':<26} {'m':>5} {'test s':>8} {'G3 check s':>10} {'ratio':>6} {'target':>7}")
    for name, canvases, margin, eps in settings(args.m):
        model = as_classifier(cnn(12, 12), backend="torch")
        y = model.predict(centre_crop(canvases, margin))
        flip = np.random.default_rng(0).random(len(y)) < 0.1
        y[flip] = (y[flip] + 1) % 12
        start = time.perf_counter()
        overfit_test(model, canvases, y, TranslationAEG(eps=eps, margin=margin), check_density=False)
        test_seconds = time.perf_counter() - start
        start = time.perf_counter()
        check_g3(canvases, margin=margin, eps=eps)
        check_seconds = time.perf_counter() - start
        print(f"{name:<26} {len(y):>5} {test_seconds:>8.2f} {check_seconds:>10.2f} "
              f"{check_seconds / test_seconds:>6.2f} {'<= 0.20':>7}", flush=True)
    folder_comparison(args.m)


def folder_comparison(m: int) -> None:
    """overfit_test_images with and without the check on a PNG folder of centred digits."""
    import tempfile

    from PIL import Image

    from fitaudit.data.images import open_images
    from fitaudit.data.pipeline import EvalPipeline
    from fitaudit.models import as_classifier
    from fitaudit.overfit.images import ImageAEGSettings, images_g3, overfit_test_images

    digits, labels = mnist()
    with tempfile.TemporaryDirectory() as root:
        for i in range(m):
            folder = Path(root) / str(labels[i])
            folder.mkdir(exist_ok=True)
            Image.fromarray((digits[i] * 255).astype(np.uint8)).save(folder / f"{i}.png")
        data, pipeline = open_images(root), EvalPipeline(resize=34, crop=28)
        model = as_classifier(cnn(12, 10), backend="torch")
        overfit_test_images([model], data, pipeline, eps=1, check_density=True)  # warm: imports, first calls
        start = time.perf_counter()
        overfit_test_images([model], data, pipeline, eps=1, check_density=False)
        test_seconds = time.perf_counter() - start
        start = time.perf_counter()
        images_g3(data, ImageAEGSettings(pipeline=pipeline, eps=1))
        check_seconds = time.perf_counter() - start
    print(f"{'MNIST PNG folder 34/28':<26} {m:>5} {test_seconds:>8.2f} {check_seconds:>10.2f} "
          f"{check_seconds / test_seconds:>6.2f} {'<= 0.20':>7}  (the check decodes its images again)", flush=True)


if __name__ == "__main__":
    main()
