"""RL examiner: which reading of "one step" reproduces the paper's dynamics? (docs/examiner.md#the-rl-examiner)

Shu et al. (AAAI 2020, Table 2) report the RL examiner's average true-class
probability falling steeply between T = 100 and T = 500 (AlexNet:
65.91 -> 18.92 -> 2.27 % at T = 100 / 300 / 500), with REINFORCE batches of
32 and Adam at lr 1e-3. This script runs the RL examiner with the paper's
settings in both modes on the 9-factor toy of ``bench_examiner_bo.py`` and
prints the mean true-class probability of the step-T queries (the paper's
E_examiner) at T = 0 (random), 100, 300 and 500, with the model queries
used:

* ``update="batch"``: a step draws 32 vectors and updates once (32 T queries);
* ``update="sequential"``: a step draws one vector; an update every 32 steps.

Run: ``OMP_NUM_THREADS=1 nice -n 10 python benchmarks/bench_examiner_rl_modes.py [--quick]``
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import time
from pathlib import Path

import numpy as np


def load_toy():
    """The toy objective of the BO benchmark (same instances)."""
    path = Path(__file__).with_name("bench_examiner_bo.py")
    spec = importlib.util.spec_from_file_location("bench_examiner_bo", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke run)")
    parser.add_argument("--instances", type=int, default=6)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    from fitaudit.examine.rl import RLExaminer

    bench = load_toy()
    checkpoints = (5, 10) if args.quick else (100, 300, 500)
    n = 2 if args.quick else args.instances
    toys = [bench.make_toy(i) for i in range(n)]
    space = bench.ours_space()
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (shared); "
          f"{n} toy instances, 9 factors, 100 bins, B = 32, Adam lr 1e-3, EMA baseline")
    print(f"  {'mode':11s} {'T':>5s} {'queries/instance':>17s} {'E_examiner (mean p at step T)':>30s} "
          f"{'worst p found':>14s} {'updates':>8s}")
    for mode in ("batch", "sequential"):
        examiner = RLExaminer(random_state=0, update=mode)
        examiner.start(space, n)
        worst = np.ones(n)
        start = time.perf_counter()
        for t in range(1, max(checkpoints) + 1):
            factors = examiner.ask()
            p = np.stack([bench.probability(factors[i], toy) for i, toy in enumerate(toys)])
            examiner.tell(factors, -p)
            worst = np.minimum(worst, p.min(axis=1))
            if t == 1:
                print(f"  {mode:11s} {0:5d} {0:17d} {p.mean():30.4f} {'':>14s} {0:8d}")
            if t in checkpoints:
                queries = t * examiner.queries_per_step
                print(f"  {mode:11s} {t:5d} {queries:17d} {p.mean():30.4f} {worst.mean():14.4f} "
                      f"{examiner.n_updates_:8d}")
        print(f"  ({mode}: {time.perf_counter() - start:.0f} s)")
    print("paper (AlexNet, ShapeNet, RL): T = 0 / 100 / 300 / 500 -> 63.98 / 65.91 / 18.92 / 2.27 %")


if __name__ == "__main__":
    main()
