"""Examining image models on their own images: effectiveness against the exact grid, and throughput.

Issue 21 / docs/examiner.md#your-own-images. One run prints, side by side:

1. Effectiveness at a tenth of the grid's queries. On the two digit CNNs of
   ``fitaudit reproduce examiner-images`` (full-mode models: 24 px crops,
   trained with and without rotation augmentation), each examined on
   ``--instances`` correctly classified test digits over rotation in
   [-30, 30] degrees and translations of up to 10% of the side (the other
   factors at their identity): the exact worst case of Engstrom et al.'s
   grid (31 x 5 x 5 = 775 queries per image) against bo, rl, optuna:tpe and
   random at 78 queries per image: the fraction of the images the grid
   breaks that each examiner breaks too (target for bo: >= 90%), and the
   mean worst true-class probability of each beside the grid's.
2. Throughput at batch 256 (random factors over the full default space of
   the image-transform generator): images per second of transform + forward
   against a plain forward pass of the same batch (target: >= 50%), for the
   digits CNN and for a wider ResNet on 64 px images, with the transform
   alone for reference.
3. The BO examiner's overhead: wall time of the bo examination against the
   random examination of the same images and budget (same model calls).

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_examiner_images.py [--instances 60] [--cache DIR]

Models, data and examinations are cached in ``--cache`` (a rerun reuses
them and says so). Output: ``benchmarks/results/examiner_images.txt``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit.data.pipeline import EvalPipeline
from fitaudit.data.transforms import ImageTransformGenerator
from fitaudit.experiments.examine.images import (
    BUDGET,
    GRID_QUERIES,
    SIZES,
    agreement,
    broken,
    digit_folders,
    examine_model,
    train_digit_models,
)

EXAMINERS = ["bo", "rl", "optuna:tpe", "random"]
BATCH = 256


def effectiveness(cache: Path, instances: int, seed: int) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
    """The table of examiners against the grid, the models and their scenarios."""
    import torch

    from fitaudit.models import as_classifier

    torch.set_num_threads(1)
    size = {**SIZES["full"], "instances": instances}
    train_dir, test_dir = digit_folders(cache / "models" / "digits-png", n_train=size["n_train"])
    pipeline = EvalPipeline(resize=size["resize"], crop=size["crop"])
    trained = train_digit_models(train_dir, pipeline, size, cache / "models", random_state=seed, progress=False)
    totals: dict[str, dict[str, float]] = {}
    models, scenarios = {}, {}
    for name, (module, _) in trained.items():
        models[name] = module
        grid, results, scenarios[name] = examine_model(as_classifier(module, batch_size=1024), test_dir, pipeline, size, EXAMINERS,
                                         random_state=seed, checkpoint_dir=cache / "examinations", progress=False)
        rows = {"grid": {"grid_failures": int(broken(grid).sum()), "found": int(broken(grid).sum()), "beyond_grid": 0,
                         "worst_sum": float(grid.min_true_class_probability.sum()), "n": len(grid.instances)}}
        for examiner, result in results.items():
            a = agreement(grid, result)
            rows[examiner] = {"grid_failures": a["grid_failures"], "found": a["found"], "beyond_grid": a["beyond_grid"],
                              "worst_sum": float(result.min_true_class_probability.sum()), "n": len(result.instances)}
        for examiner, r in rows.items():
            t = totals.setdefault(examiner, dict.fromkeys(r, 0.0))
            for k, v in r.items():
                t[k] += v
        totals.setdefault("_per_model", {})[name] = rows  # type: ignore[assignment]
    per_model = totals.pop("_per_model")
    lines = [f"{'examiner':<12} {'queries/img':>11} {'grid-broken found':>19} {'beyond grid':>11} "
             f"{'mean worst p':>12} {'grid mean worst p':>17}"]
    grid_mean = totals["grid"]["worst_sum"] / totals["grid"]["n"]
    for examiner in ["grid", *EXAMINERS]:
        t = totals[examiner]
        fraction = t["found"] / t["grid_failures"] if t["grid_failures"] else float("nan")
        lines.append(
            f"{examiner:<12} {GRID_QUERIES if examiner == 'grid' else BUDGET:>11} "
            f"{int(t['found']):>4}/{int(t['grid_failures']):<4} ({fraction:6.1%}) {int(t['beyond_grid']):>11} "
            f"{t['worst_sum'] / t['n']:>12.4f} {grid_mean:>17.4f}"
        )
    lines.append("per model (grid-broken images found, mean worst p):")
    for name, rows in per_model.items():
        parts = [f"{e} {int(r['found'])}/{int(r['grid_failures'])} p={r['worst_sum'] / r['n']:.4f}" for e, r in rows.items()]
        lines.append(f"  {name} ({int(rows['grid']['n'])} images): " + "; ".join(parts))
    return lines, models, scenarios


def _time(fn: Any, repeats: int) -> float:
    fn()  # warm-up
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def throughput(module: Any, size: int, channels: int, label: str, repeats: int = 5) -> list[str]:
    """Images/s of a plain forward pass vs transform + forward at batch 256 (random factors, full space)."""
    import torch

    from fitaudit.models import as_classifier

    rng = np.random.default_rng(0)
    canvases = rng.random((BATCH, channels, size + 4, size + 4)).astype(np.float32)
    generator = ImageTransformGenerator(canvases, np.zeros(BATCH, dtype=np.int64), padding=2, mean=[0.5] * channels,
                                        std=[0.25] * channels, batch_size=BATCH)
    classifier = as_classifier(module, batch_size=BATCH)
    rows, factors = np.arange(BATCH), generator.factor_space.sample(BATCH, random_state=0)
    plain_input = generator.model_input(rows)
    torch.set_num_threads(1)
    plain = _time(lambda: classifier.logits(plain_input), repeats)
    transform = _time(lambda: generator.generate(rows, factors), repeats)
    both = _time(lambda: classifier.logits(generator.generate(rows, factors)), repeats)
    return [
        f"{label:<34} {BATCH / plain:>10.0f} {BATCH / transform:>10.0f} {BATCH / both:>12.0f} {plain / both:>9.1%}"
    ]


def overhead(module: Any, scenario: Any, n: int, seed: int) -> list[str]:
    """Wall time of fresh (not cached) bo and random examinations of the same ``n`` images at the budget."""
    from fitaudit.examine import examine
    from fitaudit.models import as_classifier

    classifier = as_classifier(module, batch_size=1024)
    times = {}
    for name in ("random", "bo"):
        result = examine(classifier, scenario.generator, examiner=name, steps=BUDGET, instances=scenario.instances[:n],
                         random_state=seed, weakness=False, n_reference=0, chunk_size=n)
        times[name] = result.seconds
    queries = n * BUDGET
    return [
        f"3. BO overhead: {n} images x {BUDGET} queries, one chunk (one batch of {n} per step), not cached",
        f"   random {times['random']:.2f} s, bo {times['bo']:.2f} s: bo adds "
        f"{(times['bo'] - times['random']) / BUDGET * 1e3:.0f} ms per step "
        f"({(times['bo'] - times['random']) / queries * 1e3:.1f} ms per query) to the same model calls",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=60, help="correctly classified test digits per model")
    parser.add_argument("--cache", default="fitaudit-out/bench-examiner-images", help="models, data, examinations")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "examiner_images.txt"))
    args = parser.parse_args()
    import torch

    from fitaudit.models.architectures import build_architecture

    started = time.perf_counter()
    cache = Path(args.cache)
    before = {p.name for p in (cache / "examinations").glob("*.npz")}
    models_before = sorted(p.name for p in (cache / "models").glob("digits-*-*"))
    table, models, scenarios = effectiveness(cache, args.instances, args.seed)
    out = [
        "Examining image models on their own images (issue 21); one run, "
        f"torch {torch.__version__}, {torch.get_num_threads()} thread(s)",
        "",
        f"1. Effectiveness against the exact grid (Engstrom et al. 2019: {GRID_QUERIES} queries per image) at "
        f"{BUDGET} queries per image",
        f"   two digit CNNs (plain, rotation-augmented), {args.instances} correctly classified test digits each; "
        "rotation [-30, 30] deg, translation x, y [-0.1, 0.1]",
        *(f"   {line}" for line in table),
        "   target: bo finds >= 90% of the grid-broken images",
        "",
        f"2. Throughput at batch {BATCH} (random factors over the full default space), images per second",
        f"   {'model':<34} {'forward':>10} {'transform':>10} {'transform+fw':>12} {'ratio':>9}",
    ]
    resnet = build_architecture({"architecture": "shapes_resnet", "kwargs": {"n_classes": 10, "width": 32}}).eval()
    with torch.no_grad():
        out += [f"   {line}" for line in throughput(models["plain"], SIZES["full"]["crop"], 3, "digits CNN, 24 px")]
        out += [f"   {line}" for line in throughput(resnet, 64, 3, "shapes_resnet width 32, 64 px")]
    out += ["   target: transform + forward >= 50% of the forward pass alone (ratio column)", ""]
    out += overhead(models["plain"], scenarios["plain"], min(16, args.instances), args.seed)
    after = {p.name for p in (cache / "examinations").glob("*.npz")}
    computed = len(after - before)
    out += [
        "",
        f"total {time.perf_counter() - started:.0f} s on a shared machine; cache {cache}: "
        + (f"{computed} examination checkpoint files written now" if computed else
           "every examination read back from checkpoints of an earlier run of this code")
        + (f", models {', '.join(models_before)} reused" if models_before else ", models trained now"),
    ]
    text = "\n".join(out)
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
