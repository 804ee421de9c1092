"""Our GP-UCB examiner against the ``bayesian-optimization`` package the paper used.

Issue 9's targets, printed side by side in one run:

* speed: seconds per suggest + register step at t = 300 observations in 9
  dimensions, for the package (the anchor: about 0.66 s on a quiet machine)
  and for :class:`fitaudit.examine.bo.BOExaminer` (target <= 60 ms per
  instance-step, >= 10x faster), one instance alone and all the harshness instances
  advanced together;
* harshness: the worst case found in T = 200 queries by both (and by random
  search) on the same 36 toy instances (the issue asks for >= 12; one
  bump missed moves a 12-instance mean by 0.02, so 36 are used); ours must be at least as harsh.

Toy objective (one per instance, 9 factors in the unit cube): the "true-class
probability" ``p(u) = sigmoid(4 - sum_k h_k exp(-|u - c_k|^2 / (2 w_k^2)))``
with 3 weakness bumps (centres ``c_k`` uniform in [0.1, 0.9]^9, depths
``h_k`` in [4, 8], widths ``w_k`` in [0.3, 0.5]); the loss maximised is
``-p``, as the examination's default loss, and lower ``p`` is harsher.

Both optimisers search the unit cube (the package gets ``pbounds`` [0, 1]
for every factor, its best case; the paper gave it the raw factor ranges)
and start from 2 uniform points. The package runs with its defaults (GP with
Matern 2.5, ``alpha=1e-6``, ``normalize_y``, length scale refitted with 5
restarts at every step; UCB kappa 2.576; 10,000 random points + 10 L-BFGS-B
runs per suggestion). Its per-instance results are cached under ``--cache``
so that a killed run resumes; the output says when cached results were used.

Run: ``OMP_NUM_THREADS=1 nice -n 10 python benchmarks/bench_examiner_bo.py [--quick]``
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np

D = 9


def make_toy(i: int) -> dict[str, np.ndarray]:
    """Toy instance ``i``: bump centres, depths and widths."""
    rng = np.random.default_rng(1000 + i)
    return {"c": rng.uniform(0.1, 0.9, (3, D)), "h": rng.uniform(4, 8, 3), "w": rng.uniform(0.3, 0.5, 3)}


def probability(u: np.ndarray, toy: dict[str, np.ndarray]) -> np.ndarray:
    """True-class probability of the toy at points ``u (..., D)``."""
    d2 = ((u[..., None, :] - toy["c"]) ** 2).sum(-1)
    logit = 4.0 - (toy["h"] * np.exp(-d2 / (2 * toy["w"] ** 2))).sum(-1)
    return 1.0 / (1.0 + np.exp(-logit))


def package_optimizer(seed: int):
    from bayes_opt import BayesianOptimization

    bounds = {f"f{j}": (0.0, 1.0) for j in range(D)}
    return BayesianOptimization(f=None, pbounds=bounds, random_state=seed, verbose=0, allow_duplicate_points=True)


def package_register(opt, x: np.ndarray, target: float) -> None:
    opt.register(params={f"f{j}": float(x[j]) for j in range(D)}, target=target)


def package_suggest(opt) -> np.ndarray:
    params = opt.suggest()
    return np.array([params[f"f{j}"] for j in range(D)])


def package_run(toy: dict[str, np.ndarray], seed: int, steps: int) -> list[float]:
    """Probabilities of the package's ``steps`` queries (2 uniform ones first)."""
    opt = package_optimizer(seed)
    rng = np.random.default_rng(seed)
    out = []
    for t in range(steps):
        x = rng.random(D) if t < 2 else package_suggest(opt)
        p = float(probability(x, toy))
        package_register(opt, x, -p)
        out.append(p)
    return out


def true_minimum(toy: dict[str, np.ndarray]) -> float:
    """The toy's lowest probability: L-BFGS-B from 20 random points and from the 3 bump centres."""
    from scipy.optimize import minimize

    starts = [*np.random.default_rng(0).random((20, D)), *toy["c"]]
    return min(float(minimize(probability, s, args=(toy,), bounds=[(0.0, 1.0)] * D).fun) for s in starts)


def ours_space():
    from fitaudit.data.factors import Factor, FactorSpace

    return FactorSpace([Factor(f"f{j}", 0.0, 1.0, 0.5, "u") for j in range(D)])


def ours_run(toys: list[dict[str, np.ndarray]], seed: int, steps: int, name: str = "bo") -> np.ndarray:
    """Probabilities ``(n_instances, steps)`` of an examiner's queries, instances together."""
    from fitaudit.examine import get_examiner

    examiner = get_examiner(name, seed=seed)
    examiner.start(ours_space(), len(toys))
    out = np.zeros((len(toys), steps))
    for t in range(steps):
        factors = examiner.ask()
        p = np.stack([probability(factors[i, 0], toy) for i, toy in enumerate(toys)])
        examiner.tell(factors, -p[:, None])
        out[:, t] = p
    return out


def time_package(history: int, repeats: int) -> float:
    """Seconds per suggest + register after ``history`` registered points."""
    toy = make_toy(0)
    opt = package_optimizer(0)
    x = np.random.default_rng(0).random((history, D))
    for row in x:
        package_register(opt, row, -float(probability(row, toy)))
    start = time.perf_counter()
    for _ in range(repeats):
        point = package_suggest(opt)
        package_register(opt, point, -float(probability(point, toy)))
    return (time.perf_counter() - start) / repeats


def time_ours(n_instances: int, history: int, repeats: int) -> float:
    """Seconds per ask + tell step (all instances together) after ``history`` told points."""
    from fitaudit.examine.bo import BOExaminer

    toys = [make_toy(i) for i in range(n_instances)]
    examiner = BOExaminer(seed=0)
    examiner.start(ours_space(), n_instances)
    x = np.random.default_rng(0).random((n_instances, history, D))
    p = np.stack([probability(x[i], toy) for i, toy in enumerate(toys)])
    for t in range(history):
        examiner.tell(x[:, t : t + 1], -p[:, t : t + 1])
    start = time.perf_counter()
    for _ in range(repeats):
        factors = examiner.ask()
        losses = np.stack([-probability(factors[i, 0], toy) for i, toy in enumerate(toys)])
        examiner.tell(factors, losses[:, None])
    return (time.perf_counter() - start) / repeats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke run)")
    parser.add_argument("--instances", type=int, default=36)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--cache", default="fitaudit-out/bench-examiner-bo", help="package results cache")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")  # scikit-learn's convergence warnings inside the package
    n, steps = (3, 12) if args.quick else (args.instances, args.steps)
    history = 30 if args.quick else 300
    our_repeats = 10  # one full refit cycle (refit_every = 10)
    package_repeats = 2 if args.quick else 5
    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} CPUs, load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
          f"(shared machine), OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")

    print(f"\nSpeed: one suggest + register step at t = {history} observations, {D} dimensions")
    pkg = time_package(history, package_repeats)
    one = time_ours(1, history, our_repeats)
    many = time_ours(n, history, our_repeats)
    print(f"  {'optimiser':44s} {'s/step':>8s} {'ms per instance-step':>21s} {'speed-up':>9s}")
    print(f"  {'bayesian-optimization (mean of ' + str(package_repeats) + ' steps)':44s} {pkg:8.3f} "
          f"{1000 * pkg:21.1f} {1.0:9.1f}")
    print(f"  {'fitaudit BO, 1 instance (mean of 10 steps)':44s} {one:8.3f} {1000 * one:21.1f} {pkg / one:9.1f}")
    print(f"  {f'fitaudit BO, {n} instances together':44s} {many:8.3f} {1000 * many / n:21.1f} "
          f"{pkg / (many / n):9.1f}")
    print(f"  target: <= 60 ms per instance-step and >= 10x: 1 instance "
          f"{'met' if one <= 0.06 and pkg / one >= 10 else 'NOT met'}, {n} together "
          f"{'met' if many / n <= 0.06 and pkg / (many / n) >= 10 else 'NOT met'}")

    print(f"\nHarshness: true-class probability on {n} toy instances, T = {steps} (lower = harsher)")
    toys = [make_toy(i) for i in range(n)]
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    package, cached = [], 0
    for i, toy in enumerate(toys):
        path = cache / f"package_T{steps}_instance{i}.json"
        if path.exists():
            package.append(json.loads(path.read_text()))
            cached += 1
            continue
        package.append(package_run(toy, i, steps))
        path.write_text(json.dumps(package[-1]))
    package_seconds = time.perf_counter() - start
    start = time.perf_counter()
    ours = ours_run(toys, 0, steps)
    ours_seconds = time.perf_counter() - start
    rand = ours_run(toys, 0, steps, name="random")
    lowest = np.array([true_minimum(toy) for toy in toys])
    rows = [("bayesian-optimization", np.array(package)), ("fitaudit BO", ours), ("random search", rand)]
    print(f"  {'examiner':24s} {'worst found':>12s} {'p at step T':>12s} {'instances harsher than package':>31s} "
          f"{'missed the deepest bump (> min + 0.05)':>40s}")
    for name, probs in rows:
        worst = probs.min(axis=1)
        harsher = int(np.sum(worst <= np.array(package).min(axis=1)))
        missed = int(np.sum(worst > lowest + 0.05))
        print(f"  {name:24s} {worst.mean():12.4f} {probs[:, -1].mean():12.4f} {harsher:>27d}/{n} {missed:>36d}/{n}")
    print(f"  {'true minimum (L-BFGS-B)':24s} {lowest.mean():12.4f}")
    ours_worst, pkg_worst = ours.min(axis=1).mean(), np.array(package).min(axis=1).mean()
    print(f"  worst case found: ours {ours_worst:.4f} vs package {pkg_worst:.4f} -> target (at least as harsh) "
          f"{'met' if ours_worst <= pkg_worst else 'NOT met'}")
    others = [ours_run(toys, seed, steps).min(axis=1) for seed in range(1, 5)]
    spread = [ours_worst, *(w.mean() for w in others)]
    misses = [int(np.sum(w > lowest + 0.05)) for w in [ours.min(axis=1), *others]]
    print(f"  fitaudit BO with seeds 0-4 (the package ran once per instance): worst found "
          f"{np.mean(spread):.4f} on average, {min(spread):.4f} to {max(spread):.4f}; "
          f"at least as harsh as the package with {sum(w <= pkg_worst for w in spread)} of 5 seeds; "
          f"missed the deepest bump on {', '.join(map(str, misses))} of {n} instances")
    difference = np.mean([ours.min(axis=1), *others], axis=0) - np.array(package).min(axis=1)
    boot = np.random.default_rng(0).choice(difference, size=(10_000, n)).mean(axis=1)
    low, high = np.quantile(boot, [0.025, 0.975])
    print(f"  ours (mean over seeds 0-4) minus package, per instance: mean {difference.mean():+.4f}, "
          f"95% bootstrap interval over instances [{low:+.4f}, {high:+.4f}] (negative = ours harsher)")
    note = f" ({cached} of {n} instances read from the cache {cache})" if cached else ""
    print(f"  wall time of the {n} x {steps} steps: package {package_seconds:.0f} s{note}, "
          f"ours {ours_seconds:.1f} s (instances together)")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
