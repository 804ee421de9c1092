"""``fitaudit reproduce pmv-mlp-width``: an MLP's hidden width by PMV against a validation curve.

Zhang et al. (2019), experiment (d) of METHODS.md section 4. The paper uses
MNIST 0 vs 1; offline we use scikit-learn's bundled 8x8 digits, classes 0
and 1 (360 images), pixels scaled to [0, 1]. One hidden layer of width
10, 20, ..., 100, 200, ..., 800 (``MLPClassifier``, adam, default
iterations). PMV (rates 0.05..0.5) on all 360 images against the error on a
stratified 70/30 validation split (training on the 70%). Finished fits are
kept under ``OUT/checkpoints`` so an interrupted run resumes.
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier

from fitaudit.pmv.compare import compare_estimators
from fitaudit.pmv.reproduce._output import add_common_options, write_outputs


def zeros_and_ones() -> tuple[np.ndarray, np.ndarray]:
    """The digits 0 and 1 of scikit-learn's 8x8 digits, pixels in [0, 1]."""
    X, y = load_digits(return_X_y=True)
    keep = y <= 1
    return X[keep] / 16.0, y[keep]


def run(
    *, quick: bool, seed: int, n_jobs: Any, progress: bool = False, checkpoint_dir: Any = None
) -> dict[str, Any]:
    """PMV and validation error for every width."""
    widths = [5, 20] if quick else [*range(10, 101, 10), *range(200, 801, 100)]
    rates = [0.25, 0.5] if quick else None
    X, y = zeros_and_ones()
    models = {str(w): MLPClassifier(hidden_layer_sizes=(w,), random_state=seed) for w in widths}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        comparison = compare_estimators(
            models,
            X,
            y,
            rates=rates,
            random_state=seed,
            n_jobs=n_jobs,
            progress=progress,
            checkpoint_dir=checkpoint_dir,
        )
        X_train, X_val, y_train, y_val = train_test_split(
            X, y, test_size=0.3, stratify=y, random_state=seed
        )
        train_error, val_error = [], []
        for w in widths:
            model = MLPClassifier(hidden_layer_sizes=(w,), random_state=seed).fit(X_train, y_train)
            train_error.append(1 - model.score(X_train, y_train))
            val_error.append(1 - model.score(X_val, y_val))
    return {
        "widths": widths,
        "pmv": comparison.scores,
        "accuracy_at_largest_rate": [comparison.results[str(w)].mean_accuracy[-1] for w in widths],
        "train_error": train_error,
        "validation_error": val_error,
        "pmv_selects": int(comparison.best),
        "validation_selects": widths[int(np.argmin(val_error))],
        "n_samples": int(len(y)),
    }


def table(result: dict[str, Any]) -> str:
    """Markdown: width, PMV, training accuracy at r = 0.5, train and validation error."""
    lines = [
        "| width | PMV abs(k_S) | train acc at largest rate | train error (70%) | validation error (30%) |",
        "|---|---|---|---|---|",
    ]
    for i, w in enumerate(result["widths"]):
        lines.append(
            f"| {w} | {result['pmv'][i]:.4f} | {result['accuracy_at_largest_rate'][i]:.3f} | "
            f"{result['train_error'][i]:.4f} | {result['validation_error'][i]:.4f} |"
        )
    lines += [
        "",
        f"PMV selects width {result['pmv_selects']}; the validation curve selects {result['validation_selects']} "
        "(first minimum).",
    ]
    return "\n".join(lines)


def figure(result: dict[str, Any]) -> Any:
    """PMV score and validation error against width."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(result["widths"], result["pmv"], marker="o", color="C0")
    ax.set_xscale("log")
    ax.set_xlabel("hidden width")
    ax.set_ylabel("PMV abs(k_S)", color="C0")
    twin = ax.twinx()
    twin.plot(result["widths"], result["validation_error"], marker="s", color="C1")
    twin.set_ylabel("validation error", color="C1")
    ax.set_title("MLP on digits 0 vs 1")
    fig.tight_layout()
    return fig


def _handler(args: argparse.Namespace) -> dict[str, Any]:
    result = run(
        quick=args.quick,
        seed=args.seed,
        n_jobs=args.n_jobs,
        progress=not args.quiet,
        checkpoint_dir=Path(args.out) / "checkpoints",
    )
    payload = {"experiment": "pmv-mlp-width", "quick": args.quick, **result}
    return write_outputs(args.out, "pmv-mlp-width", payload, table(result), figure(result))


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``fitaudit reproduce pmv-mlp-width``."""
    parser = subparsers.add_parser(
        "pmv-mlp-width",
        parents=parents,
        help="MLP hidden width by PMV vs a validation curve (Zhang et al. 2019)",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    add_common_options(parser, "fitaudit-out/pmv-mlp-width")
    parser.set_defaults(handler=_handler)
