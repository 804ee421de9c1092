"""Translational AEG: cached shift evaluation vs naive enumeration, and the test's overhead over a forward pass.

Werpachowski et al. (NeurIPS 2019), App. B: computing h_g(g(x)) needs g at
every neighbour of g(x). The naive way re-scores every candidate of every
neighbour, ``(2 eps + 1)^2 (|V_eps| + 1)`` images per example; the cached
:class:`fitaudit.overfit.TranslationAEG` scores each needed translation once
(at most ``(4 eps + 1)^2`` images, inside the paper's ``(6 eps + 1)^2``
grid).

Model and data: the Shapes reference CNN ``shapes_alexnet`` (default width
24, about 210k parameters; untrained, in eval mode: the counts and times do
not depend on the weights, and labels are its own predictions with 10%
changed, so that some examples are wrong) on free-position Shapes canvases
(32x32 crops, periodic canvases with margin P = 3 eps).

Prints, for each eps, the model evaluations and seconds of both on the same
model and canvases (target: >= 10x fewer evaluations; the naive reference
skips the candidates of neighbours the model already gets wrong, so its
count falls below the worst case when labels are wrong), then the wall time of
the whole test (:func:`fitaudit.overfit.overfit_test`: clean predictions,
AEG, pairwise and CI tests) over a plain batched forward pass of the same
CNN on as many 32x32 images as the AEG scored (target: <= 1.3).

Run: ``python benchmarks/bench_translation.py [--quick] [--threads N]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit.data.shapes.datasets import FreePositionLayout, make_free_position_dataset
from fitaudit.models import as_classifier
from fitaudit.overfit import TranslationAEG, centre_crop, overfit_test

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the slow reference lives with the tests
from reference_translation import naive_translation_aeg  # noqa: E402

IMAGE_SIDE = 32


def shapes_cnn(seed: int) -> Any:
    """The untrained Shapes AlexNet-like reference CNN (12 classes), in eval mode."""
    import torch

    from fitaudit.models.architectures import build_architecture

    torch.manual_seed(seed)
    return build_architecture({"architecture": "shapes_alexnet", "kwargs": {"n_classes": 12}}).eval()


def canvases_and_labels(model: Any, m: int, eps: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """m free-position Shapes canvases with margin 3 eps; labels = predictions, 10% changed."""
    layout = FreePositionLayout(crop_size=IMAGE_SIDE, margin=3 * eps, object_size=20, wrap=True)
    data = make_free_position_dataset(
        -(-m // 12), 1, layout=layout, split="test", random_state=seed
    )
    canvases = data.canvases[:m]
    y = model.predict(centre_crop(canvases, 3 * eps))
    flip = np.random.default_rng(seed).random(m) < 0.1
    y[flip] = (y[flip] + 1) % model.n_classes
    return canvases, y


def timed(func: Callable[[], Any]) -> tuple[Any, float]:
    """Value and wall-clock seconds of ``func()``."""
    start = time.perf_counter()
    value = func()
    return value, time.perf_counter() - start


def compare_with_naive(model: Any, eps_values: list[int], n_naive: dict[int, int]) -> None:
    """Cached vs naive strongest AEG on the same model and canvases."""
    print("== cached vs naive, strongest AEG, same model and canvases ==")
    print(f"{'eps':>3} {'m':>3} {'(6e+1)^2':>8} {'cached ev/ex':>12} {'naive ev/ex':>11} "
          f"{'ev ratio':>8} {'cached s':>9} {'naive s':>9} {'same h_g':>8}")
    for eps in eps_values:
        m = n_naive[eps]
        canvases, y = canvases_and_labels(model, m, eps, seed=eps)
        aeg = TranslationAEG(eps=eps, margin=3 * eps, variant="strongest", batch_size=512)
        fast, t_fast = timed(partial(aeg._generate, model, canvases, y))
        slow, t_slow = timed(
            partial(naive_translation_aeg, model, canvases, y, eps=eps, margin=3 * eps,
                    variant="strongest")
        )
        same = np.allclose(fast.weight, slow.weight) and np.array_equal(fast.shift, slow.shift)
        print(f"{eps:>3} {m:>3} {(6 * eps + 1) ** 2:>8} "
              f"{fast.evaluations / m:>12.1f} {slow.evaluations / m:>11.1f} "
              f"{slow.evaluations / fast.evaluations:>8.1f} {t_fast:>9.3f} {t_slow:>9.3f} {same!s:>8}")


def measure_test_overhead(model: Any, cases: list[tuple[int, str, int]], repeats: int) -> None:
    """Wall time of overfit_test over a plain forward pass on as many images as the AEG scored.

    Each time is the fastest of ``repeats`` alternating runs (as :mod:`timeit`
    advises: slower runs measure other processes sharing the CPU).
    """
    print(f"== overfit_test wall time vs a plain batched forward pass on as many images "
          f"(best of {repeats}) ==")
    print(f"{'variant':>9} {'eps':>3} {'m':>4} {'ev/ex':>6} {'test s':>8} {'forward s':>9} {'ratio':>6}")
    rng = np.random.default_rng(0)
    for eps, variant, m in cases:
        canvases, y = canvases_and_labels(model, m, eps, seed=10 + eps)
        aeg = TranslationAEG(eps=eps, margin=3 * eps, variant=variant, batch_size=512, random_state=0)
        t_test, t_plain = np.inf, np.inf
        for _ in range(repeats):
            result, seconds = timed(partial(overfit_test, model, canvases, y, aeg))
            t_test = min(t_test, seconds)
            images = rng.random((result.evaluations, 3, IMAGE_SIDE, IMAGE_SIDE)).astype(np.float32)
            t_plain = min(t_plain, timed(partial(model.logits, images))[1])
        print(f"{variant:>9} {eps:>3} {m:>4} {result.evaluations / m:>6.1f} {t_test:>8.3f} "
              f"{t_plain:>9.3f} {t_test / t_plain:>6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer examples, eps in {1, 3}")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--overhead-only", action="store_true", help="skip the naive comparison")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    model = as_classifier(shapes_cnn(0), batch_size=512)
    model.logits(np.zeros((8, 3, IMAGE_SIDE, IMAGE_SIDE), dtype=np.float32))  # warm-up
    eps_values = [1, 3] if args.quick else [1, 2, 3, 5]
    # the naive enumeration scores 14,641 images per example at eps = 5: fewer examples there
    n_naive = {eps: (2 if args.quick or eps == 5 else 8) for eps in eps_values}
    if not args.overhead_only:
        compare_with_naive(model, eps_values, n_naive)
        print()
    if args.quick:
        measure_test_overhead(model, [(2, "strongest", 16), (2, "random", 16)], repeats=1)
    else:
        cases = [(2, "strongest", 64), (2, "random", 64), (5, "strongest", 16)]
        measure_test_overhead(model, cases, repeats=3)


if __name__ == "__main__":
    main()
