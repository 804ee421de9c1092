"""The cost of a zoom-out's shifted first pass alone, in one process on ``bench_leakage_sizes.py --speed 20000``'s images.

Every edit with the unshifted first pass (``image_search.FIRST_STEPS`` set to no shift, the search before issue
49's fourth wave) and with the nine shifts, alternated twice, after today's search; CPU and wall seconds, flagged,
clean flagged, null. Output quoted in ``benchmarks/results/leakage_speed.txt``. Run:
``python benchmarks/bench_leakage_zoom_shifts.py``.
"""

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_leakage_sizes as b  # noqa: E402
from fitaudit.leakage import image_features, image_leakage, image_search  # noqa: E402


def main() -> None:
    n, per_kind, seed = 20000, 10, 0
    train, clean = b.renders(n, 32, "train", seed), b.renders(n, 32, "test", seed + 10)
    twins = b.plant_twins(train, per_kind, random_state=seed + 2)
    rng = np.random.default_rng(seed + 3)
    free = np.setdiff1d(np.arange(n), twins.source)
    sources = rng.choice(free, size=per_kind * len(b.AUGMENTED_KINDS), replace=False)
    kinds = np.repeat(np.array(b.AUGMENTED_KINDS), per_kind)
    made = np.stack([b.augmented_twin(train[s], k) for s, k in zip(sources, kinds)]).astype(np.float32)
    scored, reference = image_features(np.concatenate([clean, twins.images, made])), image_features(train)
    shifted = image_search.FIRST_STEPS
    for name, steps, augmented in [("today", shifted, False), ("unshifted first pass", ((0, 0),), True),
                                   ("zoom-outs at nine shifts", shifted, True), ("unshifted first pass", ((0, 0),), True),
                                   ("zoom-outs at nine shifts", shifted, True)]:
        image_search.FIRST_STEPS = steps
        cpu, wall = time.process_time(), time.perf_counter()
        r = image_leakage(scored, reference, augmented=augmented)
        print(f"{name:26s} CPU {time.process_time() - cpu:6.1f} s  wall {time.perf_counter() - wall:6.1f} s  "
              f"flagged {r.n_near}  clean {int(np.sum(r.near_scored < n))}  null {r.null_near}/{r.n_calibration}", flush=True)


if __name__ == "__main__":
    main()
