"""Official PGDL conditional MI: the vectorised scorer against the per-pair loop.

A complete grid of 4 x 4 x 4 x 2 x 2 x 2 = 512 models (6 hyperparameters,
30 ordered pairs of them, 262,144 ordered model pairs each), a noisy
measure with ties. Times :func:`fitaudit.pgdl.official_cmi` (best of 5)
and the straightforward per-pair transcription of the official program
used by the tests (tests/pgdl/_official_reference.py, one run), checks
they give the same number and prints the speedup (target >= 50x).

Run: ``python benchmarks/bench_pgdl_cmi.py``
"""

from __future__ import annotations

import importlib.util
import itertools
import time
from pathlib import Path

import numpy as np

from fitaudit.pgdl import official_cmi

GRID = {
    "depth": [1, 2, 3, 4],
    "width": [32, 64, 128, 256],
    "dropout": [0.0, 0.1, 0.25, 0.5],
    "batch_norm": [True, False],
    "weight_decay": [0.0, 0.0005],
    "batch_size": [64, 128],
}


def _reference():
    path = Path(__file__).resolve().parents[1] / "tests" / "pgdl" / "_official_reference.py"
    spec = importlib.util.spec_from_file_location("_official_reference", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.reference_official_cmi


def make_task(seed: int = 0) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    configs, measure = {}, {}
    for i, combo in enumerate(itertools.product(*GRID.values())):
        gap = 0.05 * combo[0] + 0.0005 * combo[1] - 0.2 * combo[2] + rng.normal(scale=0.05)
        configs[str(i)] = {
            "hparams": {
                name: {"possible_values": options, "current_value": value}
                for (name, options), value in zip(GRID.items(), combo)
            },
            "metrics": {"train_acc": 1.0, "test_acc": float(1.0 - gap)},
        }
        measure[f"model_{i}"] = float(np.round(gap + rng.normal(scale=0.05), 2))
    return configs, measure


def main() -> None:
    configs, measure = make_task()
    official_cmi(configs, measure)  # warm-up
    fast_times = []
    for _ in range(5):
        start = time.perf_counter()
        fast = official_cmi(configs, measure)
        fast_times.append(time.perf_counter() - start)
    start = time.perf_counter()
    slow = _reference()(configs, measure)
    slow_time = time.perf_counter() - start
    fast_time = min(fast_times)
    print(f"official CMI, {len(configs)} models, {len(GRID)} hyperparameters, {len(GRID) * (len(GRID) - 1)} ordered pairs")
    print(f"  {'implementation':<34} {'seconds':>9} {'score':>20}")
    print(f"  {'fitaudit.pgdl.official_cmi':<34} {fast_time:9.3f} {fast:20.15f}")
    print(f"  {'per-pair loop (official algorithm)':<34} {slow_time:9.3f} {slow:20.15f}")
    print(f"  |difference| = {abs(fast - slow):.2e}; speedup = {slow_time / fast_time:.0f}x (target >= 50x)")


if __name__ == "__main__":
    main()
