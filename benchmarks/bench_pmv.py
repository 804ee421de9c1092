"""PMVSearchCV against GridSearchCV on the same grid, and PMV's n_jobs scaling.

PMV with k noise rates costs k + 1 fits per candidate (on all the data);
10-fold GridSearchCV costs 10 fits per candidate (on 90% of it) plus one
refit. With 10 rates the two should take about the same time: target
ratio PMV / GridSearchCV <= 1.2. Parallel fits should scale: target speedup
>= 1.6x from n_jobs=1 to n_jobs=2.

Run: ``python benchmarks/bench_pmv.py [--n-jobs 2] [--repeats 3]``. Wall
times are medians over ``--repeats`` runs; on a machine shared with other
work they are noisy.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.tree import DecisionTreeClassifier

from fitaudit.pmv import DEFAULT_RATES, PMVSearchCV

GRID = {"max_depth": [2, 4, 6, 8, 10, 12, 14, None]}


def median_seconds(action: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``action`` over ``repeats`` runs."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n-samples", type=int, default=4000)
    args = parser.parse_args()

    X, y = make_classification(
        n_samples=args.n_samples, n_features=30, n_informative=10, n_classes=3, random_state=0
    )
    tree = DecisionTreeClassifier(random_state=0)
    n_candidates = len(GRID["max_depth"])

    def pmv(n_jobs: int) -> Callable[[], object]:
        return lambda: PMVSearchCV(tree, GRID, rates=DEFAULT_RATES, random_state=0, n_jobs=n_jobs).fit(X, y)

    def grid(n_jobs: int) -> Callable[[], object]:
        folds = StratifiedKFold(10, shuffle=True, random_state=0)
        return lambda: GridSearchCV(tree, GRID, cv=folds, n_jobs=n_jobs).fit(X, y)

    pmv(args.n_jobs)()  # warm the worker pool
    t_pmv = median_seconds(pmv(args.n_jobs), args.repeats)
    t_grid = median_seconds(grid(args.n_jobs), args.repeats)
    t_pmv_1 = median_seconds(pmv(1), args.repeats)
    t_pmv_2 = median_seconds(pmv(2), args.repeats)

    print(f"data: make_classification {X.shape}, 3 classes; decision tree, {n_candidates} max_depth values")
    print(f"PMVSearchCV  (10 rates, {11 * n_candidates} fits + refit), n_jobs={args.n_jobs}: {t_pmv:.2f} s")
    print(f"GridSearchCV (10-fold,  {10 * n_candidates} fits + refit), n_jobs={args.n_jobs}: {t_grid:.2f} s")
    ratio = t_pmv / t_grid
    print(f"ratio PMV / GridSearchCV: {ratio:.2f}  (target <= 1.2: {'met' if ratio <= 1.2 else 'NOT met'})")
    speedup = t_pmv_1 / t_pmv_2
    print(
        f"PMVSearchCV n_jobs=1: {t_pmv_1:.2f} s, n_jobs=2: {t_pmv_2:.2f} s, speedup {speedup:.2f}x "
        f"(target >= 1.6x: {'met' if speedup >= 1.6 else 'NOT met'})"
    )


if __name__ == "__main__":
    main()
