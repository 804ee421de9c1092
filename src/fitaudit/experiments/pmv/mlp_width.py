"""An MLP's hidden width by PMV against a validation curve (``fitaudit reproduce pmv-mlp-width``).

Zhang et al. (2019), experiment (d) of the PMV reproductions in the user
guide. The paper uses MNIST 0 vs 1; offline we use scikit-learn's bundled
8x8 digits, classes 0 and 1 (360 images), pixels scaled to [0, 1]. One
hidden layer of width 10, 20, ..., 100, 200, ..., 800 (``MLPClassifier``,
adam, default iterations). PMV (rates 0.05..0.5) on all 360 images against
the error on a stratified 70/30 validation split (training on the 70%).

The whole curve is one checkpointed unit of a
:class:`~fitaudit.checkpoint.CheckpointStore` keyed by the settings, the
seed and the data; its PMV fits are checkpointed too, so an interrupted
run resumes.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier

from fitaudit.experiments.base import ParallelOptions, Run
from fitaudit.pmv.compare import compare_estimators
from fitaudit.results import Result

#: sizes of the two modes
MODES: dict[str, dict[str, Any]] = {
    "quick": {"widths": [5, 20], "rates": [0.25, 0.5]},
    "full": {"widths": [*range(10, 101, 10), *range(200, 801, 100)], "rates": None},
}

if TYPE_CHECKING:
    from typing import Unpack


@dataclasses.dataclass(repr=False)
class MLPWidthReproduction(Result):
    """PMV score and validation error of every hidden width.

    Attributes
    ----------
    experiment : str
        ``"pmv-mlp-width"``.
    mode : {"quick", "full"}
    widths : list of int
    pmv : list of float
        |k_S| per width.
    accuracy_at_largest_rate : list of float
        Training accuracy on the perturbed labels at the largest rate.
    train_error, validation_error : list of float
        Errors of the width trained on the 70% part.
    pmv_selects, validation_selects : int
        The width with the largest |k_S|; the first width with the smallest
        validation error.
    n_samples : int
    seconds : float
        Wall time of this call (less when resumed).
    """

    experiment: str
    mode: str
    widths: list[int]
    pmv: list[float]
    accuracy_at_largest_rate: list[float]
    train_error: list[float]
    validation_error: list[float]
    pmv_selects: int
    validation_selects: int
    n_samples: int
    seconds: float

    def _summary_fields(self) -> list[str]:
        return ["mode", "widths", "pmv_selects", "validation_selects", "seconds"]


def zeros_and_ones() -> tuple[np.ndarray, np.ndarray]:
    """The digits 0 and 1 of scikit-learn's 8x8 digits, pixels in [0, 1]."""
    X, y = load_digits(return_X_y=True)
    keep = y <= 1
    return X[keep] / 16.0, y[keep]


def width_curve(
    X: np.ndarray,
    y: np.ndarray,
    *,
    widths: list[int],
    rates: Any,
    random_state: int,
    n_jobs: Any,
    progress: bool = False,
    checkpoint_dir: Any = None,
) -> dict[str, Any]:
    """PMV and validation error for every width."""
    models = {str(w): MLPClassifier(hidden_layer_sizes=(w,), random_state=random_state) for w in widths}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        comparison = compare_estimators(
            models, X, y, rates=rates, random_state=random_state, n_jobs=n_jobs, progress=progress,
            checkpoint_dir=checkpoint_dir,
        )
        X_train, X_val, y_train, y_val = train_test_split(
            X, y, test_size=0.3, stratify=y, random_state=random_state
        )
        train_error, val_error = [], []
        for w in widths:
            model = MLPClassifier(hidden_layer_sizes=(w,), random_state=random_state).fit(X_train, y_train)
            train_error.append(1 - model.score(X_train, y_train))
            val_error.append(1 - model.score(X_val, y_val))
    return {
        "pmv": comparison.scores,
        "accuracy_at_largest_rate": [comparison.results[str(w)].mean_accuracy[-1] for w in widths],
        "train_error": train_error,
        "validation_error": val_error,
        "pmv_selects": int(comparison.best),
        "validation_selects": widths[int(np.argmin(val_error))],
    }


def reproduce_pmv_mlp_width(**options: Unpack[ParallelOptions]) -> MLPWidthReproduction:
    """Run the width sweep (see the module docstring).

    ``options``: :class:`~fitaudit.experiments.base.ParallelOptions`. Mode
    ``"quick"``: widths 5 and 20, rates 0.25 and 0.5 (seconds).
    ``random_state`` seeds the networks, the perturbations and the split.
    """
    run = Run(MODES, **options)
    mode, setting = run.mode, run.settings
    X, y = zeros_and_ones()
    curve = run.unit(
        width_curve, X, y, widths=setting["widths"], rates=setting["rates"], random_state=run.random_state,
    )
    return MLPWidthReproduction(
        experiment="pmv-mlp-width",
        mode=mode,
        widths=list(setting["widths"]),
        n_samples=int(len(y)),
        seconds=run.seconds(),
        **curve,
    )
