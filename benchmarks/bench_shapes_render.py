"""Renders per second of the Shapes world's g(z, s), against the 2,000/s target.

Run: ``python benchmarks/bench_shapes_render.py [--batch 512] [--repeats 5]``.

Renders batches of random instances of every class under factors drawn
uniformly from the whole world, at 32x32 (the target) and 64x64, and prints
wall-clock and CPU-time throughput (on a shared machine the CPU-time figure
is the one that does not depend on the neighbours' load). numpy runs on
one thread here, so the figure is per core.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fitaudit.data.shapes import sample_instances, shapes_factor_space
from fitaudit.data.shapes.render import BACKGROUND, render_unchecked

TARGET_PER_SECOND = 2000.0


def measure(image_size: int, batch: int, repeats: int) -> tuple[float, float]:
    """(wall renders/s, CPU renders/s) at ``image_size``, best of ``repeats`` batches."""
    objects = sample_instances(-(-batch // 12), world_seed=0)
    instances = objects.take(np.arange(batch) % len(objects))
    factors = shapes_factor_space().sample(batch, random_state=1)
    background = np.asarray(BACKGROUND, dtype=np.float32)
    render_unchecked(instances, factors, image_size, background)  # warm-up
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        render_unchecked(instances, factors, image_size, background)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return batch / min(walls), batch / min(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"Shapes renderer, batch {args.batch}, best of {args.repeats} (target {TARGET_PER_SECOND:,.0f} renders/s at 32x32)")
    for size in (32, 64):
        wall, cpu = measure(size, args.batch, args.repeats)
        verdict = ("meets" if wall >= TARGET_PER_SECOND else "misses") + " the target" if size == 32 else ""
        print(f"  {size}x{size}: {wall:8,.0f} renders/s wall, {cpu:8,.0f} renders/s per CPU second  {verdict}")


if __name__ == "__main__":
    main()
