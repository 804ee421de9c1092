"""PMV against 10-fold CV on scikit-learn's classifier comparison (``fitaudit reproduce pmv-comparison``).

Zhang et al. (2019), experiments (a) and (b) of the PMV reproductions in the
user guide: the three data sets of scikit-learn's "classifier comparison"
example (moons, circles, linearly separable; 100 points each) with extra
label noise 0, 0.1 and 0.2 injected per class, the example's seven
classifiers with its settings (features standardised), plus a decision tree
without max_depth (sure to overfit). For each setting: the PMV score |k_S|
(rates 0.05..0.5), 10-fold CV test accuracy and |train - test| accuracy
gap, and the classifier each method selects (PMV: largest |k_S|; CV:
largest test accuracy).

Each (data set, noise) setting is one checkpointed unit of a
:class:`~fitaudit.checkpoint.CheckpointStore`, keyed by the mode's settings,
the seed and the data; the PMV fits inside it are checkpointed too.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.ensemble import AdaBoostClassifier, RandomForestClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF
from sklearn.model_selection import StratifiedKFold, cross_validate
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.tree import DecisionTreeClassifier

from fitaudit.experiments.base import ParallelOptions, Run
from fitaudit.pmv.catalogue import load_dataset
from fitaudit.pmv.compare import compare_estimators
from fitaudit.pmv.perturb import flip_labels
from fitaudit.random import spawn_seeds
from fitaudit.results import Result

#: sizes of the two modes
MODES: dict[str, dict[str, Any]] = {
    "quick": {"datasets": ["moons"], "noises": [0.0], "rates": [0.1, 0.3, 0.5], "folds": 3},
    "full": {"datasets": ["moons", "circles", "linear"], "noises": [0.0, 0.1, 0.2], "rates": None, "folds": 10},
}

if TYPE_CHECKING:
    from typing import Unpack


@dataclasses.dataclass(repr=False)
class PMVComparisonReproduction(Result):
    """PMV and cross-validation on every (data set, noise) setting.

    Attributes
    ----------
    experiment : str
        ``"pmv-comparison"``.
    mode : {"quick", "full"}
    classifiers : list of str
        Names of the candidates, in table order.
    settings : list of dict
        One per (data set, noise): ``dataset``, ``noise``, ``pmv_selects``,
        ``cv_selects``, ``cv_accuracy_of_pmv_choice``, ``best_cv_accuracy``
        and ``classifiers[name]`` with ``pmv`` (|k_S|), ``cv_test_accuracy``,
        ``cv_gap`` and ``train_accuracy_r0``.
    n_agree : int
        Settings where PMV and CV select the same classifier.
    seconds : float
        Wall time of this call (less when resumed).
    """

    experiment: str
    mode: str
    classifiers: list[str]
    settings: list[dict[str, Any]]
    n_agree: int
    seconds: float

    def _summary_fields(self) -> list[str]:
        return ["mode", "classifiers", "n_agree", "seconds"]


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


def one_setting(
    X: np.ndarray,
    y: np.ndarray,
    *,
    quick: bool,
    rates: Any,
    folds: int,
    pmv_seed: int,
    cv_seed: int,
    n_jobs: int | None,
    progress: bool,
    checkpoint_dir: Any,
) -> dict[str, Any]:
    """PMV scores and cross-validation of every classifier on one data set.

    The Gaussian process with the example's kernel bounds often ends its
    hyper-parameter search at a bound on perturbed labels; scikit-learn's
    ConvergenceWarning about it is silenced (the scores are what they are).
    """
    models = classifiers(quick)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        comparison = compare_estimators(
            models, X, y, rates=rates, random_state=pmv_seed, n_jobs=n_jobs, progress=progress,
            checkpoint_dir=checkpoint_dir,
        )
        splitter = StratifiedKFold(folds, shuffle=True, random_state=cv_seed)
        cv = {
            name: cross_validate(model, X, y, cv=splitter, return_train_score=True, n_jobs=n_jobs)
            for name, model in models.items()
        }
    rows = {
        name: {
            "pmv": float(comparison.results[name].score),
            "cv_test_accuracy": float(np.mean(cv[name]["test_score"])),
            "cv_gap": float(abs(np.mean(cv[name]["train_score"]) - np.mean(cv[name]["test_score"]))),
            "train_accuracy_r0": float(comparison.results[name].mean_accuracy[0]),
        }
        for name in models
    }
    cv_best = max(rows, key=lambda n: rows[n]["cv_test_accuracy"])
    return {
        "pmv_selects": comparison.best,
        "cv_selects": cv_best,
        "cv_accuracy_of_pmv_choice": rows[comparison.best]["cv_test_accuracy"],
        "best_cv_accuracy": rows[cv_best]["cv_test_accuracy"],
        "classifiers": rows,
    }


def reproduce_pmv_comparison(**options: Unpack[ParallelOptions]) -> PMVComparisonReproduction:
    """Run every (data set, noise) setting (see the module docstring).

    ``options``: :class:`~fitaudit.experiments.base.ParallelOptions`. Mode
    ``"quick"``: moons without extra noise, 3 rates, 3 folds, no Gaussian
    process (seconds); ``"full"``: the 9 settings. ``random_state`` seeds
    the injected noise, the perturbations and the CV folds.
    """
    run = Run(MODES, **options)
    mode, setting, random_state = run.mode, run.settings, run.random_state
    quick = mode == "quick"
    seeds = iter(spawn_seeds(random_state, 2 * len(setting["datasets"]) * len(setting["noises"])))
    records = []
    for dataset in setting["datasets"]:
        X, y_clean = load_dataset(dataset)
        for noise in setting["noises"]:
            noise_seed, pmv_seed = next(seeds), next(seeds)
            y = y_clean if noise == 0 else flip_labels(y_clean, noise, random_state=noise_seed)
            record = run.unit(
                one_setting, X, y, quick=quick, rates=setting["rates"], folds=setting["folds"], pmv_seed=pmv_seed,
                cv_seed=random_state,
            )
            records.append({"dataset": dataset, "noise": noise, **record})
    return PMVComparisonReproduction(
        experiment="pmv-comparison",
        mode=mode,
        classifiers=list(classifiers(quick)),
        settings=records,
        n_agree=sum(r["pmv_selects"] == r["cv_selects"] for r in records),
        seconds=run.seconds(),
    )
