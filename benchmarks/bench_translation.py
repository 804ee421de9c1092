"""Translational AEG: cached shift evaluation vs naive enumeration, and overhead over a forward pass.

Werpachowski et al. (NeurIPS 2019), App. B: computing h_g(g(x)) needs g at
every neighbour of g(x). The naive way re-scores every candidate of every
neighbour, ``(2 eps + 1)^2 (|V_eps| + 1)`` images per example; the cached
:class:`fitaudit.overfit.translation.TranslationAEG` scores each needed
translation once (at most ``(4 eps + 1)^2`` images, inside the paper's
``(6 eps + 1)^2`` grid).

Prints, for each eps, the model evaluations and seconds of both on the same
model and canvases (target: >= 10x fewer evaluations), then the cached AEG's
wall time over a plain batched forward pass on as many 32x32 images as it
scored (target: <= 1.3).

Run: ``python benchmarks/bench_translation.py [--quick] [--threads N]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from fitaudit.models import as_classifier
from fitaudit.overfit.translation import TranslationAEG, centre_crop
from fitaudit.overfit.translation_reference import naive_translation_aeg

IMAGE_SIDE = 32


def small_cnn(n_classes: int, seed: int) -> Any:
    """A CNN of the size used on the Shapes world (3x32x32 inputs)."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(64, n_classes),
    ).eval()


def canvases_and_labels(model: Any, m: int, margin: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Smooth random canvases; labels = the model's predictions on most centre crops."""
    rng = np.random.default_rng(seed)
    side = IMAGE_SIDE + 2 * margin
    coarse = rng.random((m, 3, side // 4 + 2, side // 4 + 2))
    canvases = np.repeat(np.repeat(coarse, 4, axis=2), 4, axis=3)[:, :, :side, :side]
    canvases = canvases.astype(np.float32)
    y = model.logits(centre_crop(canvases, margin)).argmax(axis=1)
    flip = rng.random(m) < 0.1
    y[flip] = (y[flip] + 1) % model.n_classes
    return canvases, y


def timed(func: Callable[[], Any]) -> tuple[Any, float]:
    """Value and wall-clock seconds of ``func()``."""
    start = time.perf_counter()
    value = func()
    return value, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer examples, eps in {1, 3}")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    model = as_classifier(small_cnn(5, 0), batch_size=512)
    eps_values = [1, 3] if args.quick else [1, 2, 3, 5]
    n_naive = 2 if args.quick else 4

    print("== cached vs naive, strongest AEG, same model and canvases ==")
    print(f"{'eps':>3} {'m':>3} {'(6e+1)^2':>8} {'cached ev/ex':>12} {'naive ev/ex':>11} "
          f"{'ev ratio':>8} {'cached s':>9} {'naive s':>9} {'same h_g':>8}")
    for eps in eps_values:
        canvases, y = canvases_and_labels(model, n_naive, 3 * eps, seed=eps)
        aeg = TranslationAEG(eps=eps, margin=3 * eps, variant="strongest")
        fast, t_fast = timed(partial(aeg._generate, model, canvases, y))
        slow, t_slow = timed(
            partial(naive_translation_aeg, model, canvases, y, eps=eps, margin=3 * eps,
                    variant="strongest")
        )
        same = np.allclose(fast.weight, slow.weight) and np.array_equal(fast.shift, slow.shift)
        print(f"{eps:>3} {n_naive:>3} {(6 * eps + 1) ** 2:>8} "
              f"{fast.evaluations / n_naive:>12.1f} {slow.evaluations / n_naive:>11.1f} "
              f"{slow.evaluations / fast.evaluations:>8.1f} {t_fast:>9.3f} {t_slow:>9.3f} {same!s:>8}")

    print()
    print("== cached AEG wall time vs a plain batched forward pass on as many images ==")
    print(f"{'variant':>9} {'eps':>3} {'m':>4} {'ev/ex':>6} {'AEG s':>8} {'forward s':>9} {'ratio':>6}")
    m = 16 if args.quick else 64
    rng = np.random.default_rng(0)
    for eps, variant in [(2, "strongest"), (2, "random"), (5, "strongest")][: 2 if args.quick else 3]:
        canvases, y = canvases_and_labels(model, m, 3 * eps, seed=10 + eps)
        aeg = TranslationAEG(eps=eps, margin=3 * eps, variant=variant, batch_size=512, random_state=0)
        model.logits(canvases[:8, :, : IMAGE_SIDE, : IMAGE_SIDE])  # warm-up
        out, t_aeg = timed(partial(aeg._generate, model, canvases, y))
        images = rng.random((out.evaluations, 3, IMAGE_SIDE, IMAGE_SIDE)).astype(np.float32)
        _, t_plain = timed(partial(model.logits, images))
        print(f"{variant:>9} {eps:>3} {m:>4} {out.evaluations / m:>6.1f} {t_aeg:>8.3f} "
              f"{t_plain:>9.3f} {t_aeg / t_plain:>6.2f}")


if __name__ == "__main__":
    main()
