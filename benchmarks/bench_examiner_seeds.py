"""The examiner's spread over seeds, and its numbers through one backend vs another (docs/examiner.md).

Issue 30 item 7: the examiner's adaptive search amplifies the backends' tiny
logit differences, and ``backend="auto"`` chooses a backend by timing, so
the same seed could give other numbers on another machine. The examiner now
runs torch models eager at a fixed batch size unless a backend is named,
and records it. This script measures, on the plain digit CNN of
``fitaudit reproduce examiner-images --quick`` (scikit-learn's digits as
PNG folders, rotation in [-30, 30] degrees and translations up to 10% of the
side free, every other factor fixed) with the BO examiner at T steps on the
same 10 correctly classified test digits:

* the spread over 5 examiner seeds (eager): worst-case accuracy, the mean
  worst true-class probability found, the paper's E_examiner (mean
  true-class probability at step T);
* that a second run with the same seed and backend repeats every number;
* seed 0 through ``backend="auto"`` beside eager (the difference a change of
  backend makes, within the seeds' spread or not).

Run: ``OMP_NUM_THREADS=1 nice -n 10 python benchmarks/bench_examiner_seeds.py [--steps 30] [--out DIR]``
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np


def _numbers(result) -> dict[str, float]:
    from fitaudit.experiments.examine.images import broken

    return {"worst_case_accuracy": float(1.0 - broken(result).mean()),
            "mean_worst_true_class_probability": float(result.min_true_class_probability.mean()),
            "e_examiner_true_class_probability": float(result.mean_final_true_class_probability),
            "seconds": round(float(result.seconds), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out", default="fitaudit-out/bench-examiner-seeds")
    args = parser.parse_args()

    from fitaudit.data.images import open_images
    from fitaudit.data.pipeline import EvalPipeline
    from fitaudit.examine import examine
    from fitaudit.examine.scenarios import image_scenario
    from fitaudit.experiments.examine.images import (
        GRID_SPACE,
        SIZES,
        digit_folders,
        train_digit_models,
    )
    from fitaudit.models import as_classifier

    out = Path(args.out)
    size = SIZES["quick"]
    train_dir, test_dir = digit_folders(out / "digits-png", n_train=size["n_train"])
    pipeline = EvalPipeline(resize=size["resize"], crop=size["crop"])
    module = train_digit_models(train_dir, pipeline, size, out, random_state=0, progress=False)["plain"][0]
    dataset = open_images(test_dir, name="test_dir")
    scenario = image_scenario(as_classifier(module, backend="eager"), dataset, pipeline=pipeline, factors=GRID_SPACE,
                              instances=size["instances"], random_state=0)

    def run(seed: int, backend: str):
        return examine(module, scenario.generator, examiner="bo", steps=args.steps, instances=scenario.instances,
                       random_state=seed, backend=backend, weakness=False)

    started = time.perf_counter()
    rows = {seed: _numbers(run(seed, "eager")) for seed in range(args.seeds)}
    again = _numbers(run(0, "eager"))
    auto = run(0, "auto")
    report = {"steps": args.steps, "instances": int(len(scenario.instances)), "per_seed_eager": rows,
              "seed_0_again_eager": again, "seed_0_auto": _numbers(auto)}
    keys = ("worst_case_accuracy", "mean_worst_true_class_probability", "e_examiner_true_class_probability")
    print(f"BO examiner, T = {args.steps}, {len(scenario.instances)} digits, plain digit CNN "
          f"({time.perf_counter() - started:.0f} s)")
    print("| seed | " + " | ".join(keys) + " |")
    print("|---|" + "---|" * len(keys))
    for seed, numbers in rows.items():
        print(f"| {seed} (eager) | " + " | ".join(f"{numbers[k]:.3f}" for k in keys) + " |")
    for label, numbers in (("0 again (eager)", again), ("0 (auto)", report["seed_0_auto"])):
        print(f"| {label} | " + " | ".join(f"{numbers[k]:.3f}" for k in keys) + " |")
    for k in keys:
        values = np.array([numbers[k] for numbers in rows.values()])
        print(f"{k}: mean {values.mean():.3f}, SD {values.std(ddof=1):.3f}, range {values.min():.3f}-{values.max():.3f}")
    repeated = all(again[k] == rows[0][k] for k in keys)
    print(f"same seed, same backend, run again: {'identical' if repeated else 'DIFFERENT'}")
    (out / "result.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
