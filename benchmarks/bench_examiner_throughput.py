"""Examination throughput against raw render + forward, and examiners' effectiveness at equal T.

Issue 9's targets (printed side by side):

* examination throughput (queries/s, all instances examined together) at
  least 50% of the raw throughput of rendering + classifying batches of the
  same size, for the random and RL examiners; BO's overhead per step stated;
* effectiveness at an equal budget T = 200: the mean true-class probability
  at step T (the paper's number) and the worst case found, for BO, RL, TPE
  and random, with the model queries each used.

Model: the reproductions' Shapes AlexNet-like reference model (trained and
cached under ``fitaudit-out/examiner-models`` on first use). Instances: 2
held-out objects of each of its 6 classes (12), 32x32 renders, the paper's
nine factors examined (sun direction fixed at random). Torch runs on one
thread; the machine's load average is printed (it is shared). Each
examiner first runs one untimed step: the first torch optimiser a process
creates imports ``torch._dynamo`` (about 1.7 s, once per process), which
would otherwise be charged to whichever examination comes first.

Run: ``OMP_NUM_THREADS=1 python benchmarks/bench_examiner_throughput.py [--quick]``
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def raw_throughput(model, generator, instances, space, repeats):
    """Queries/s of generate + logits of ``repeats`` fresh random batches (the same work as ``repeats`` steps)."""
    from fitaudit.data.generators import generate_checked

    batches = [space.sample(len(instances), random_state=r) for r in range(repeats)]
    start = time.perf_counter()
    for factors in batches:
        model.logits(generate_checked(generator, instances, factors))
    return len(instances) * repeats / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke run)")
    parser.add_argument("--models", default="fitaudit-out/examiner-models", help="reference-model cache")
    parser.add_argument("--throughput-only", action="store_true", help="skip the effectiveness runs")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(1)
    from fitaudit.data.shapes import ShapesGenerator
    from fitaudit.examine import examine
    from fitaudit.experiments.examine._common import fixed_factors
    from fitaudit.experiments.examine._models import model_settings, reference_model
    from fitaudit.models import as_classifier

    settings = model_settings("shapes_alexnet", quick=args.quick)
    module, info = reference_model(settings, args.models, progress=False)
    model = as_classifier(module, batch_size=1024)
    generator = ShapesGenerator(2, classes=settings["classes"], image_size=settings["image_size"])
    ranges = fixed_factors(0)
    space = generator.factor_space.restrict(**{k: (v, v) for k, v in ranges.items()})
    n = len(generator.labels)
    through_steps = 3 if args.quick else 30
    budget = 5 if args.quick else 200
    print(f"model: {settings['architecture']} (validation accuracy {info['validation_accuracy']:.3f}), "
          f"{n} instances, {settings['image_size']}x{settings['image_size']}, torch threads 1, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")

    print(f"\nThroughput (queries/s, all instances together, {through_steps} steps; raw = render + forward of "
          f"{through_steps} random batches of the same size)")
    print(f"  {'examiner':12s} {'batch':>6s} {'examination':>12s} {'raw':>9s} {'ratio':>6s}  target")
    rows = [("random", {"queries_per_step": 32}), ("rl", {"batch_size": 32}), ("bo", None)]
    for name, options in rows:
        examine(model, generator, examiner=name, examiner_options=options, steps=1, ranges=ranges,
                random_state=0, n_reference=0, weakness=False)  # warm-up: one-off imports
        result = examine(model, generator, examiner=name, examiner_options=options, steps=through_steps,
                         ranges=ranges, random_state=0, n_reference=0, weakness=False)
        q = result.queries_per_step
        batch_instances = np.repeat(np.arange(n), q)
        raw = raw_throughput(model, generator, batch_instances, space, through_steps)
        rate = result.n_model_queries / result.seconds
        target = ">= 50%: " + ("met" if rate >= 0.5 * raw else "NOT met") if name != "bo" else "(overhead stated)"
        print(f"  {name:12s} {n * q:6d} {rate:12,.0f} {raw:9,.0f} {rate / raw:6.0%}  {target}")
        if name == "bo":
            per_step = result.seconds / through_steps - n / raw
            print(f"  BO overhead: {per_step * 1e3:.0f} ms per step for {n} instances "
                  f"({per_step / n * 1e3:.1f} ms per instance-step) at t <= {through_steps}")

    if args.throughput_only:
        return
    print(f"\nEffectiveness at T = {budget} (mean true-class probability over {n} instances; lower = harsher)")
    print(f"  {'examiner':18s} {'at step T':>9s} {'worst found':>11s} {'model queries':>13s} {'seconds':>8s}")
    contenders = [
        ("bo", "bo", None), ("rl (batch 32)", "rl", None), ("rl (sequential)", "rl", {"update": "sequential"}),
        ("optuna:tpe", "optuna:tpe", None), ("random", "random", None),
    ]
    bo_seconds = float("nan")
    for label, name, options in contenders:
        result = examine(model, generator, examiner=name, examiner_options=options, steps=budget, ranges=ranges,
                         random_state=0, n_reference=0, weakness=False)
        print(f"  {label:18s} {result.mean_final_true_class_probability:9.1%} "
              f"{result.mean_extreme_true_class_probability:11.1%} {result.n_model_queries:13,d} {result.seconds:8.1f}")
        if name == "bo":
            bo_seconds = result.seconds
    raw = raw_throughput(model, generator, np.arange(n), space, budget)
    print(f"  BO overhead over T = {budget}: {(bo_seconds - budget * n / raw) / budget * 1e3:.0f} ms per step for "
          f"{n} instances on top of {n / raw * 1e3:.0f} ms of render + forward")


if __name__ == "__main__":
    main()
