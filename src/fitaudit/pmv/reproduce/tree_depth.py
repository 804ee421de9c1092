"""``fitaudit reproduce pmv-tree-depth``: choosing a decision tree's max_depth by PMV and by GridSearchCV.

Zhang et al. (2019), experiment (c) of METHODS.md section 4, on breast
cancer and digits. Each of 5 runs splits the data 70/30 (stratified, seed of
the run), selects max_depth in 1..15 or None on the training part with
:class:`PMVSearchCV` (rates 0.05..0.5), with its single-rate mutation
criterion (eta = 0.2) and with ``GridSearchCV`` (10-fold, shuffled), refits, and records the held-out accuracy of both choices. The
spread of the chosen depth over the runs measures stability. Repeated on a
stratified 5% subsample of the training part ("small data"); there, rates
too small to flip one label of the smallest class are dropped (reported).
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
from sklearn.model_selection import GridSearchCV, StratifiedKFold, train_test_split
from sklearn.tree import DecisionTreeClassifier

from fitaudit.pmv.catalogue import load_dataset
from fitaudit.pmv.perturb import DEFAULT_RATES, flip_counts
from fitaudit.pmv.reproduce._output import add_common_options, write_outputs
from fitaudit.pmv.search import PMVSearchCV

#: selection methods compared: key and table label
METHODS = (("pmv", "PMV"), ("mutation", "mutation (eta 0.2)"), ("grid", "GridSearchCV"))


def usable_rates(y: np.ndarray, rates: tuple[float, ...]) -> list[float]:
    """The rates that flip at least one label of every class of ``y``."""
    sizes = np.unique(y, return_counts=True)[1]
    return [r for r in rates if np.all(flip_counts(sizes, r) >= 1)]


def one_setting(
    X: np.ndarray,
    y: np.ndarray,
    *,
    fraction: float,
    runs: int,
    depths: list[Any],
    folds: int,
    seed: int,
    n_jobs: Any,
) -> dict[str, Any]:
    """Both selections over ``runs`` repeated splits; chosen depths and held-out accuracies."""
    chosen: dict[str, list[Any]] = {key: [] for key, _ in METHODS}
    accuracy: dict[str, list[float]] = {key: [] for key, _ in METHODS}
    pmv_curves, cv_curves, rates_used = [], [], []
    for run in range(runs):
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=0.3, stratify=y, random_state=seed + run
        )
        if fraction < 1:
            X_train, _, y_train, _ = train_test_split(
                X_train, y_train, train_size=fraction, stratify=y_train, random_state=seed + run
            )
        rates = usable_rates(y_train, DEFAULT_RATES)
        rates_used.append(rates)
        tree = DecisionTreeClassifier(random_state=seed + run)
        grid = {"max_depth": depths}
        pmv = PMVSearchCV(tree, grid, rates=rates, random_state=seed + run, n_jobs=n_jobs).fit(
            X_train, y_train
        )
        mutation = PMVSearchCV(
            tree, grid, criterion="mutation", random_state=seed + run, n_jobs=n_jobs
        ).fit(X_train, y_train)
        splitter = StratifiedKFold(
            min(folds, int(np.bincount(y_train).min())), shuffle=True, random_state=seed + run
        )
        gs = GridSearchCV(tree, grid, cv=splitter, n_jobs=n_jobs).fit(X_train, y_train)
        for key, search in (("pmv", pmv), ("mutation", mutation), ("grid", gs)):
            chosen[key].append(search.best_params_["max_depth"])
            accuracy[key].append(float(search.score(X_test, y_test)))
        pmv_curves.append(pmv.cv_results_["mean_test_score"])
        cv_curves.append(gs.cv_results_["mean_test_score"])
    return {
        "n_train": int(len(y_train)),
        "rates_used": rates_used,
        "chosen_depth": chosen,
        "test_accuracy": accuracy,
        "mean_pmv_curve": np.mean(pmv_curves, axis=0),
        "mean_cv_curve": np.mean(cv_curves, axis=0),
    }


def _depth_text(depths: list[Any]) -> str:
    return ", ".join("None" if d is None else str(d) for d in depths)


def _numeric(depths: list[Any], cap: int) -> np.ndarray:
    return np.array([cap if d is None else d for d in depths], dtype=float)


def run(*, quick: bool, seed: int, n_jobs: Any) -> tuple[list[dict[str, Any]], list[Any]]:
    """Every (data set, size) setting."""
    depths: list[Any] = [1, 2, 4, 8, None] if quick else [*range(1, 16), None]
    runs = 2 if quick else 5
    folds = 3 if quick else 10
    datasets = ["breast_cancer"] if quick else ["breast_cancer", "digits"]
    records = []
    for dataset in datasets:
        X, y = load_dataset(dataset)
        for label, fraction in (("full", 1.0), ("5%", 0.05)):
            result = one_setting(
                X,
                y,
                fraction=fraction,
                runs=runs,
                depths=depths,
                folds=folds,
                seed=seed,
                n_jobs=n_jobs,
            )
            records.append({"dataset": dataset, "size": label, **result})
    return records, depths


def table(records: list[dict[str, Any]], depths: list[Any]) -> str:
    """Markdown: chosen depths per run (spread) and held-out accuracy of each method's choice."""
    cap = max(d for d in depths if d is not None) + 1
    lines = [
        "| data | size (n train) | method | depth chosen per run | depth mean (sd), None counted as "
        f"{cap} | held-out acc mean (sd) |",
        "|---|---|---|---|---|---|",
    ]
    for rec in records:
        for key, label in METHODS:
            chosen = rec["chosen_depth"][key]
            numeric = _numeric(chosen, cap)
            acc = np.array(rec["test_accuracy"][key])
            lines.append(
                f"| {rec['dataset']} | {rec['size']} ({rec['n_train']}) | {label} | {_depth_text(chosen)} | "
                f"{numeric.mean():.1f} ({numeric.std():.1f}) | {acc.mean():.3f} ({acc.std():.3f}) |"
            )
    return "\n".join(lines)


def figure(records: list[dict[str, Any]], depths: list[Any]) -> Any:
    """PMV score and CV accuracy against depth, mean over runs, one panel per setting."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cap = max(d for d in depths if d is not None) + 1
    x = _numeric(depths, cap)
    fig, axes = plt.subplots(1, len(records), figsize=(4 * len(records), 3.3), squeeze=False)
    for ax, rec in zip(axes.ravel(), records):
        ax.plot(x, rec["mean_pmv_curve"], marker="o", color="C0", label="PMV abs(k_S)")
        ax.set_xlabel(f"max_depth ({cap} = None)")
        ax.set_ylabel("PMV abs(k_S)", color="C0")
        twin = ax.twinx()
        twin.plot(x, rec["mean_cv_curve"], marker="s", color="C1", label="CV accuracy")
        twin.set_ylabel("10-fold CV accuracy", color="C1")
        ax.set_title(f"{rec['dataset']} {rec['size']}", fontsize="small")
    fig.tight_layout()
    return fig


def _handler(args: argparse.Namespace) -> dict[str, Any]:
    records, depths = run(quick=args.quick, seed=args.seed, n_jobs=args.n_jobs)
    payload = {
        "experiment": "pmv-tree-depth",
        "quick": args.quick,
        "depths": depths,
        "settings": records,
    }
    return write_outputs(
        args.out, "pmv-tree-depth", payload, table(records, depths), figure(records, depths)
    )


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``fitaudit reproduce pmv-tree-depth``."""
    parser = subparsers.add_parser(
        "pmv-tree-depth",
        parents=parents,
        help="decision-tree depth chosen by PMV vs GridSearchCV (Zhang et al. 2019)",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    add_common_options(parser, "fitaudit-out/pmv-tree-depth")
    parser.set_defaults(handler=_handler)
