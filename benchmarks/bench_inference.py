"""Inference backends side by side, and the instruments end to end against today's eager path.

Issue 24's targets, printed in one run:

* images/s of each way to run a torch module (eager, channels_last,
  jit-optimised, torch.compile, onnxruntime) and of the automatic choice
  (:func:`fitaudit.models.as_classifier`, ``backend="auto"``, at the batch
  size it chose) for the Shapes AlexNet and ResNet (12 classes, default
  width 24, 32x32), a PGDL zoo member (``pgdl_nin``, 10 classes, 32x32) and
  ResNet-18 (1000 classes, 224x224). Target: the automatic choice at >= 90%
  of the fastest backend for each model. The fixed-backend rows run at one
  batch size (256 rows at 32x32, 32 at 224x224); each number is the best of
  ``--repeats`` interleaved runs (the machine is shared: slower runs measure
  other processes), each after a rest of ``SETTLE_S`` so that no thread
  pool of the row before is still spinning on a core (before this rest the
  automatic row, timed right after the onnxruntime row, lost 10-20% to that
  session's idle threads); 2,048 images per pass at 32x32 and 5 repeats
  (were 1,024 and 3: two quiet runs of the same code then differed by up to
  20% in one row's ratio to the fastest);
* end to end on the Shapes AlexNet: the overfitting test with the
  translational AEG (strongest, eps 2 on 32 canvases and 5 on 8; margin
  3 eps, labels its predictions with 10% changed) and an examination (random
  examiner, 16 queries per step, T = 100, 12 instances) through today's path
  (the module run eagerly under ``torch.inference_mode`` in batches of 256,
  1024 in the examination, as the adapter did before issue 24) and through
  the automatic choice (with the choice cached on disk, as in every run after
  the first; the first run's choosing time is printed apart). Target: >= 2.5x
  faster. The p-values, error counts and predictions of both paths are
  printed beside the times, and a bound: the eager time over the time the
  run would take with every forward pass at the highest float32 rate
  measured in the run (a 2048 x 2048 matrix product, or the best backend of
  the table on any model, whichever is higher; the overfitting test with
  nothing but forward passes, the examination with its renders besides):
  about the most any float32 backend could gain on this CPU.

The table also gives each backend's GFLOP/s (the model's convolution and
matrix-product FLOPs per image, torch's flop counter, times images/s) and that
rate over the matrix product's (above 100% where a backend's convolutions run
closer to the cores' peak than torch's 2048 x 2048 product does).

Weights are untrained (random, in eval mode): times do not depend on them.
Torch uses its default thread count (the cores); onnxruntime the same.

Run: ``python benchmarks/bench_inference.py [--quick] [--end-to-end]`` (``--end-to-end``: that
section only; it also times the examination's renders alone, the part no backend speeds up)
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

#: (label, architecture config, image side, fixed batch, images timed)
MODELS = [
    ("Shapes AlexNet", {"architecture": "shapes_alexnet", "kwargs": {"n_classes": 12}}, 32, 256, 2048),
    ("Shapes ResNet", {"architecture": "shapes_resnet", "kwargs": {"n_classes": 12}}, 32, 256, 2048),
    ("PGDL NiN", {"architecture": "pgdl_nin", "kwargs": {"n_classes": 10}}, 32, 256, 2048),
    ("ResNet-18", {"architecture": "resnet18", "kwargs": {"n_classes": 1000}}, 224, 32, 64),
]


def build(config: dict[str, Any], seed: int = 0) -> Any:
    import torch

    from fitaudit.models.architectures import build_architecture

    torch.manual_seed(seed)
    return build_architecture(config).eval()


#: seconds of rest before each reading: the thread pools of the row timed before (torch's OpenMP threads, an
#: onnxruntime session built with spinning threads) stop spinning before the next row's clock starts
SETTLE_S = 0.1


def best_rate(run: Callable[[np.ndarray], Any], x: np.ndarray, batch: int) -> float:
    """Images/s of one pass over ``x`` in batches of ``batch``, after :data:`SETTLE_S` of rest."""
    time.sleep(SETTLE_S)
    start = time.perf_counter()
    for i in range(0, len(x), batch):
        run(x[i : i + batch])
    return len(x) / (time.perf_counter() - start)


def sgemm_peak() -> float:
    """GFLOP/s of a 2048 x 2048 float32 matrix product in torch (best of 10): what this CPU's cores can do at most."""
    import torch

    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    best = np.inf
    for _ in range(10):
        start = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - start)
    return 2 * 2048**3 / best / 1e9


def flops_per_image(module: Any, side: int) -> float:
    """Floating-point operations of one forward pass on one ``3 x side x side`` image (torch's flop counter)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with torch.inference_mode(), FlopCounterMode(display=False) as counter:
        module(torch.zeros(1, 3, side, side))
    return float(counter.get_total_flops())


def backend_runners(module: Any, x: np.ndarray, batch: int, with_compile: bool) -> dict[str, Any]:
    """Every runner of :mod:`fitaudit.models.inference.runners` that builds for this module (reason otherwise)."""
    import torch

    from fitaudit.models.inference import runners as R

    device, dtype = torch.device("cpu"), torch.float32
    example = x[:2]
    builders: dict[str, Callable[[], Any]] = {
        "eager": lambda: R.eager(module, device, dtype),
        "channels_last": lambda: R.channels_last(module, device, dtype, example),
        "jit": lambda: R.jit(module, device, dtype, example),
        "onnxruntime": lambda: R.onnx(module, device, dtype, example, cache_file=None,
                                      threads=torch.get_num_threads()),
    }
    if with_compile:
        builders["torch.compile"] = lambda: R.compiled(module, device, dtype)
    runners: dict[str, Any] = {}
    for name, make in builders.items():
        start = time.perf_counter()
        try:
            runner = make()
            runner(x[:batch])  # torch.compile compiles here, for this batch shape
        except Exception as exc:  # noqa: BLE001 - a benchmark row says why it is missing
            runners[name] = f"unavailable: {str(exc).splitlines()[0][:60]}"
            continue
        runners[name] = (runner, time.perf_counter() - start)
    return runners


def throughput_table(quick: bool, repeats: int, with_compile: bool, peak: float) -> float:
    """Print the table; return the highest GFLOP/s any backend reached on any model."""
    import torch

    from fitaudit.models import as_classifier

    print(f"== images/s per backend (torch {torch.__version__}, {torch.get_num_threads()} threads; "
          f"best of {repeats}); GFLOP/s, and over the {peak:.0f} GFLOP/s of a float32 matrix product ==")
    print(f"{'model':<15} {'backend':<14} {'batch':>5} {'images/s':>9} {'vs best':>8} {'setup s':>8} "
          f"{'GFLOP/s':>8} {'of sgemm':>8}")
    rng = np.random.default_rng(0)
    highest = 0.0
    for label, config, side, batch, n in MODELS:
        n = max(2 * batch, n // 4) if quick else n
        module = build(config)
        x = rng.random((n, 3, side, side), dtype=np.float32)
        runners = backend_runners(module, x, batch, with_compile and side <= 64)
        gflop = flops_per_image(module, side) / 1e9
        start = time.perf_counter()
        auto = as_classifier(module)
        auto.logits(x[:batch])
        choose_s = time.perf_counter() - start
        auto_batch = auto.inference_info["batch_size"]
        rates: dict[str, float] = {}
        for _ in range(repeats):
            for name, entry in runners.items():
                if isinstance(entry, tuple):
                    rates[name] = max(rates.get(name, 0.0), best_rate(entry[0], x, batch))
            rates["auto"] = max(rates.get("auto", 0.0), best_rate(auto.logits, x, auto_batch))
        fastest = max(v for k, v in rates.items() if k != "auto")
        highest = max(highest, max(rates.values()) * gflop)
        for name, entry in runners.items():
            if not isinstance(entry, tuple):
                print(f"{label:<15} {name:<14} {'':>5} {entry}")
                continue
            print(f"{label:<15} {name:<14} {batch:>5} {rates[name]:>9,.0f} {rates[name] / fastest:>8.0%} {entry[1]:>8.2f} "
                  f"{rates[name] * gflop:>8.0f} {rates[name] * gflop / peak:>8.0%}")
        info = auto.inference_info
        chose = f"auto={info['mode']}"
        verdict = "met" if rates["auto"] >= 0.9 * fastest else "NOT met"
        print(f"{label:<15} {chose:<14} {auto_batch:>5} {rates['auto']:>9,.0f} {rates['auto'] / fastest:>8.0%} "
              f"{choose_s:>8.2f} {rates['auto'] * gflop:>8.0f} {rates['auto'] * gflop / peak:>8.0%}  "
              f"target >= 90%: {verdict}")
    print()
    return highest


class TodaysEager:
    """The adapter before issue 24: the module run eagerly under ``torch.inference_mode`` in fixed batches."""

    def __init__(self, module: Any, n_classes: int, batch_size: int) -> None:
        import torch

        from fitaudit.models import CallableClassifier

        def forward(x: np.ndarray) -> np.ndarray:
            with torch.inference_mode():
                return module(torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))).double().numpy()

        self.classifier = CallableClassifier(forward, n_classes=n_classes, batch_size=batch_size)


def canvases_and_labels(model: Any, m: int, eps: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """m free-position Shapes canvases with margin 3 eps; labels = predictions, 10% changed."""
    from fitaudit.data.shapes.datasets import FreePositionLayout, make_free_position_dataset
    from fitaudit.overfit import centre_crop

    layout = FreePositionLayout(crop_size=32, margin=3 * eps, object_size=20, wrap=True)
    data = make_free_position_dataset(-(-m // 12), 1, layout=layout, split="test", random_state=seed)
    canvases = data.canvases[:m]
    y = model.predict(centre_crop(canvases, 3 * eps))
    flip = np.random.default_rng(seed).random(m) < 0.1
    y[flip] = (y[flip] + 1) % model.n_classes
    return canvases, y


def timed(func: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = func()
    return value, time.perf_counter() - start


def end_to_end(quick: bool, repeats: int, peak: float) -> None:
    from fitaudit.data.shapes import ShapesGenerator
    from fitaudit.examine import examine
    from fitaudit.models import as_classifier
    from fitaudit.overfit import TranslationAEG, overfit_test

    module = build(MODELS[0][1], seed=1)  # other weights than the table's: its choice is not in the cache yet
    gflop = flops_per_image(module, 32) / 1e9
    today = TodaysEager(module, 12, 256).classifier
    first = as_classifier(module)
    _, choose_s = timed(lambda: first.logits(np.zeros((64, 3, 32, 32), np.float32)))
    auto = as_classifier(module)  # a second adapter of the same weights: the choice comes from the cache
    auto.logits(np.zeros((64, 3, 32, 32), np.float32))
    info = auto.inference_info
    print(f"== end to end, Shapes AlexNet: today's eager path vs the automatic choice "
          f"({info['mode']}, batch {info['batch_size']}, {info['threads']} threads; choosing it took "
          f"{choose_s:.1f} s in the first run, then read from the cache) ==")
    print(f"{'run':<34} {'eager s':>8} {'auto s':>8} {'speed-up':>8} {'bound':>7}  same result? (overfit tests: best of "
          f"{repeats})")
    cases = [(2, 16 if quick else 32), (5, 4 if quick else 8)]
    for eps, m in cases:
        canvases, y = canvases_and_labels(today, m, eps, seed=10 + eps)
        aeg = TranslationAEG(eps=eps, margin=3 * eps, variant="strongest", batch_size=512)
        t_slow = t_fast = np.inf
        for _ in range(repeats):  # alternating, the fastest of each kept
            slow, seconds = timed(partial(overfit_test, today, canvases, y, aeg))
            t_slow = min(t_slow, seconds)
            fast, seconds = timed(partial(overfit_test, auto, canvases, y, aeg))
            t_fast = min(t_fast, seconds)
        same = (f"p {slow.pvalue:.4f} vs {fast.pvalue:.4f}, errors {slow.risk_plain * m:.0f} vs "
                f"{fast.risk_plain * m:.0f}, successes {slow.n_success} vs {fast.n_success}, "
                f"evaluations {slow.evaluations} vs {fast.evaluations}")
        label = f"overfit test eps {eps} (m = {m})"
        bound = t_slow / (fast.evaluations * gflop / peak)
        print(f"{label:<34} {t_slow:>8.2f} {t_fast:>8.2f} {t_slow / t_fast:>7.2f}x {bound:>6.2f}x  {same}")
    steps = 20 if quick else 100
    generator = ShapesGenerator(1, classes=list(range(12)), image_size=32)
    options = {"examiner": "random", "examiner_options": {"queries_per_step": 16}, "steps": steps,
               "random_state": 0, "weakness": False}
    eager_model = TodaysEager(module, 12, 1024).classifier
    slow, t_slow = timed(partial(examine, eager_model, generator, **options))
    fast, t_fast = timed(partial(examine, auto, generator, **options))
    agree = np.mean(slow.queries["predicted"] == fast.queries["predicted"])
    gap = np.max(np.abs(slow.queries["loss"] - fast.queries["loss"]))
    n_steps_queries = 12 * 16
    batches = [generator.factor_space.sample(n_steps_queries, random_state=t) for t in range(steps)]
    query_instances = np.repeat(np.arange(12), 16)
    _, t_render = timed(lambda: [generator.generate(query_instances, f) for f in batches])
    bound = t_slow / (t_render + slow.n_model_queries * gflop / peak)
    label = f"examination T = {steps} ({slow.n_model_queries:,} q)"
    print(f"{label:<34} {t_slow:>8.2f} {t_fast:>8.2f} {t_slow / t_fast:>7.2f}x {bound:>6.2f}x  "
          f"predictions equal {agree:.2%}, losses within {gap:.1e}")
    print(f"  of which rendering: {t_render:.2f} s for {steps} batches of {n_steps_queries} renders alone "
          f"(uniform factors, {steps * n_steps_queries / t_render:,.0f} renders/s)")
    print(f"bound: the eager time over the time the run would take with every forward pass at {peak:.0f} GFLOP/s "
          f"(the highest float32 rate measured in this run: the matrix product or a backend of the table) at "
          f"{gflop * 1e3:.1f} MFLOP per image, and nothing else but the renders")
    print("target: >= 2.5x faster")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer images and examples, T = 20")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved repeats per backend (best kept)")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument("--end-to-end", action="store_true", help="only the end-to-end section")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:  # choices and exports made by this run only
        os.environ["FITAUDIT_CACHE_DIR"] = cache
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            load = os.getloadavg()[0]
            print(f"load average {load:.1f} on {os.cpu_count()} CPUs at the start")
            sgemm = sgemm_peak()
            print(f"float32 matrix product (2048 x 2048, torch): {sgemm:.0f} GFLOP/s")
            peak = sgemm
            if not args.end_to_end:
                peak = max(sgemm, throughput_table(args.quick, 1 if args.quick else args.repeats,
                                                   not args.no_compile, sgemm))
            end_to_end(args.quick, 1 if args.quick else 2, peak)


if __name__ == "__main__":
    main()
