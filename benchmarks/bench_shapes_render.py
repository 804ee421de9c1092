"""Renders per second of the Shapes world's g(z, s), against the 2,000/s target and the previous renderer.

Run: ``python benchmarks/bench_shapes_render.py [--batch 512] [--repeats 5]``.

Renders batches of random instances of every class under factors drawn
uniformly from the whole world, at 32x32 (the target) and 64x64, and an
examination's step (12 objects x 16 queries = 192 renders at 32x32, as in
``bench_inference.py``'s end-to-end examination). Each row prints
wall-clock and CPU-time throughput (on a shared machine the CPU-time figure
is the one that does not depend on the neighbours' load) of

* ``previous``: the renderer before issue 24's speed-up, kept verbatim as
  the tests' reference (``tests/data/shapes/_render_reference.py``);
* ``now``: :func:`fitaudit.data.shapes.render.render_unchecked`.

Both run on one thread (numpy's loops), so the figures are per core.

Each figure is the best of ``--repeats`` interleaved passes; every pass's
images are checked equal to the previous renderer's.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from fitaudit.data.shapes import sample_instances, shapes_factor_space
from fitaudit.data.shapes.render import BACKGROUND, render_unchecked

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "data" / "shapes"))
from _render_reference import reference_render  # noqa: E402  (the tests' copy of the previous renderer)

TARGET_PER_SECOND = 2000.0


def measure(renderers: dict[str, Callable[..., np.ndarray]], image_size: int, batch: int, n_objects: int,
            repeats: int) -> dict[str, tuple[float, float]]:
    """{renderer: (wall renders/s, CPU renders/s)} for ``batch`` renders of ``n_objects`` objects, best of ``repeats``."""
    objects = sample_instances(-(-n_objects // 12), world_seed=0)
    instances = objects.take(np.repeat(np.arange(len(objects)), -(-batch // len(objects)))[:batch])
    factors = shapes_factor_space().sample(batch, random_state=1)
    background = np.asarray(BACKGROUND, dtype=np.float32)
    expected = reference_render(instances, factors, image_size, background)  # also the warm-up
    best: dict[str, tuple[float, float]] = {}
    for _ in range(repeats):
        for name, run in renderers.items():
            wall, cpu = time.perf_counter(), time.process_time()
            images = run(instances, factors, image_size, background)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            if not np.array_equal(images, expected):
                raise SystemExit(f"{name}: images differ from the previous renderer's")
            previous = best.get(name, (0.0, 0.0))
            best[name] = (max(previous[0], batch / wall), max(previous[1], batch / cpu))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    renderers: dict[str, Callable[..., np.ndarray]] = {"previous": reference_render, "now": render_unchecked}
    print(f"Shapes renderer, best of {args.repeats} (target {TARGET_PER_SECOND:,.0f} renders/s at 32x32); "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'case':<34} {'renderer':<9} {'renders/s':>10} {'per CPU s':>10} {'vs previous':>12}")
    cases = [(f"32x32, batch {args.batch}", 32, args.batch, args.batch),
             (f"64x64, batch {args.batch}", 64, args.batch, args.batch),
             ("32x32, examination step (12 x 16)", 32, 192, 12)]
    for label, size, batch, n_objects in cases:
        rates = measure(renderers, size, batch, n_objects, args.repeats)
        for name, (wall, cpu) in rates.items():
            verdict = ""
            if size == 32 and name != "previous":
                verdict = "  meets the target" if wall >= TARGET_PER_SECOND else "  misses the target"
            print(f"{label:<34} {name:<9} {wall:>10,.0f} {cpu:>10,.0f} {wall / rates['previous'][0]:>11.2f}x{verdict}")


if __name__ == "__main__":
    main()
