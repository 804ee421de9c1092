"""``fitaudit reproduce pmv-comparison``: PMV against 10-fold CV on scikit-learn's classifier comparison.

Zhang et al. (2019), experiments (a) and (b) of METHODS.md section 4: the
three data sets of scikit-learn's "classifier comparison" example (moons,
circles, linearly separable; 100 points each) with extra label noise 0, 0.1
and 0.2 injected per class, the example's seven classifiers with its
settings (features standardised), plus a decision tree without max_depth
(sure to overfit). For each setting: the PMV score |k_S| (rates
0.05..0.5), 10-fold CV test accuracy and |train - test| accuracy gap, and
the classifier each method selects (PMV: largest |k_S|; CV: largest test
accuracy). PMV fits are kept under ``OUT/checkpoints`` (resume).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.ensemble import AdaBoostClassifier, RandomForestClassifier
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF
from sklearn.model_selection import StratifiedKFold, cross_validate
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.tree import DecisionTreeClassifier

from fitaudit.pmv.catalogue import load_dataset
from fitaudit.pmv.compare import compare_estimators
from fitaudit.pmv.perturb import flip_labels
from fitaudit.pmv.reproduce._output import add_common_options, write_outputs
from fitaudit.random import spawn_seeds


def classifiers(quick: bool) -> dict[str, BaseEstimator]:
    """The example's classifiers (its settings), each after a StandardScaler, plus an unbounded tree."""
    models: dict[str, BaseEstimator] = {
        "Gaussian process": GaussianProcessClassifier(1.0 * RBF(1.0), random_state=42),
        "Decision tree": DecisionTreeClassifier(max_depth=5, random_state=42),
        "Naive Bayes": GaussianNB(),
        "Linear SVM": SVC(kernel="linear", C=0.025, random_state=42),
        "RBF SVM": SVC(gamma=2, C=1, random_state=42),
        "AdaBoost": AdaBoostClassifier(random_state=42),
        "Random forest": RandomForestClassifier(
            max_depth=5, n_estimators=10, max_features=1, random_state=42
        ),
        "Tree, no max_depth": DecisionTreeClassifier(random_state=42),
    }
    if quick:
        models.pop("Gaussian process")
    return {name: make_pipeline(StandardScaler(), model) for name, model in models.items()}


def run(
    *,
    quick: bool,
    seed: int,
    n_jobs: int | None,
    progress: bool = False,
    checkpoint_dir: Any = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """All (data set, noise) settings; one record per setting."""
    datasets = ["moons"] if quick else ["moons", "circles", "linear"]
    noises = [0.0] if quick else [0.0, 0.1, 0.2]
    rates = [0.1, 0.3, 0.5] if quick else None
    folds = 3 if quick else 10
    models = classifiers(quick)
    seeds = iter(spawn_seeds(seed, 2 * len(datasets) * len(noises)))
    records = []
    for dataset in datasets:
        X, y_clean = load_dataset(dataset)
        for noise in noises:
            noise_seed, pmv_seed = next(seeds), next(seeds)
            y = y_clean if noise == 0 else flip_labels(y_clean, noise, random_state=noise_seed)
            comparison = compare_estimators(
                models,
                X,
                y,
                rates=rates,
                random_state=pmv_seed,
                n_jobs=n_jobs,
                progress=progress,
                checkpoint_dir=checkpoint_dir,
            )
            splitter = StratifiedKFold(folds, shuffle=True, random_state=seed)
            cv = {
                name: cross_validate(
                    model, X, y, cv=splitter, return_train_score=True, n_jobs=n_jobs
                )
                for name, model in models.items()
            }
            rows = {
                name: {
                    "pmv": float(comparison.results[name].score),
                    "cv_test_accuracy": float(np.mean(cv[name]["test_score"])),
                    "cv_gap": float(
                        abs(np.mean(cv[name]["train_score"]) - np.mean(cv[name]["test_score"]))
                    ),
                    "train_accuracy_r0": float(comparison.results[name].mean_accuracy[0]),
                }
                for name in models
            }
            cv_best = max(rows, key=lambda n: rows[n]["cv_test_accuracy"])
            records.append(
                {
                    "dataset": dataset,
                    "noise": noise,
                    "pmv_selects": comparison.best,
                    "cv_selects": cv_best,
                    "cv_accuracy_of_pmv_choice": rows[comparison.best]["cv_test_accuracy"],
                    "best_cv_accuracy": rows[cv_best]["cv_test_accuracy"],
                    "classifiers": rows,
                }
            )
    return records, list(models)


def table(records: list[dict[str, Any]], names: list[str]) -> str:
    """Markdown: per setting, PMV / CV test accuracy / gap for every classifier, and the selections."""
    lines = [
        "| data | noise | classifier | PMV abs(k_S) | 10-fold CV test acc | abs(train - test) | train acc r=0 |",
        "|---|---|---|---|---|---|---|",
    ]
    for rec in records:
        for name in names:
            row = rec["classifiers"][name]
            marks = ("P" if name == rec["pmv_selects"] else "") + (
                "C" if name == rec["cv_selects"] else ""
            )
            lines.append(
                f"| {rec['dataset']} | {rec['noise']:g} | {name}{' [' + marks + ']' if marks else ''} | "
                f"{row['pmv']:.3f} | {row['cv_test_accuracy']:.3f} | {row['cv_gap']:.3f} | "
                f"{row['train_accuracy_r0']:.3f} |"
            )
    lines += [
        "",
        "[P] = selected by PMV (largest abs(k_S)), [C] = selected by 10-fold CV (largest test accuracy).",
        "",
        "| data | noise | PMV selects | its CV acc | CV selects | its CV acc |",
        "|---|---|---|---|---|---|",
    ]
    for rec in records:
        lines.append(
            f"| {rec['dataset']} | {rec['noise']:g} | {rec['pmv_selects']} | "
            f"{rec['cv_accuracy_of_pmv_choice']:.3f} | {rec['cv_selects']} | {rec['best_cv_accuracy']:.3f} |"
        )
    return "\n".join(lines)


def figure(records: list[dict[str, Any]], names: list[str]) -> Any:
    """One panel per setting: PMV score against CV test accuracy, one point per classifier."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = len({r["noise"] for r in records})
    rows = len(records) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.3 * rows), squeeze=False)
    for ax, rec in zip(axes.ravel(), records):
        for i, name in enumerate(names):
            row = rec["classifiers"][name]
            ax.scatter(row["cv_test_accuracy"], row["pmv"], color=f"C{i}", label=name)
        ax.set_title(f"{rec['dataset']}, noise {rec['noise']:g}", fontsize="small")
        ax.set_xlabel("10-fold CV test accuracy")
        ax.set_ylabel("PMV abs(k_S)")
    axes.ravel()[0].legend(fontsize="x-small")
    fig.tight_layout()
    return fig


def _handler(args: argparse.Namespace) -> dict[str, Any]:
    records, names = run(
        quick=args.quick,
        seed=args.seed,
        n_jobs=args.n_jobs,
        progress=not args.quiet,
        checkpoint_dir=Path(args.out) / "checkpoints",
    )
    agree = sum(r["pmv_selects"] == r["cv_selects"] for r in records)
    payload = {
        "experiment": "pmv-comparison",
        "quick": args.quick,
        "settings": records,
        "selections_agree": f"{agree} of {len(records)}",
    }
    return write_outputs(
        args.out, "pmv-comparison", payload, table(records, names), figure(records, names)
    )


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``fitaudit reproduce pmv-comparison``."""
    parser = subparsers.add_parser(
        "pmv-comparison",
        parents=parents,
        help="PMV vs 10-fold CV on scikit-learn's classifier comparison (Zhang et al. 2019)",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    add_common_options(parser, "fitaudit-out/pmv-comparison")
    parser.set_defaults(handler=_handler)
