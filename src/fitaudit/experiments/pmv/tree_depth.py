"""A decision tree's max_depth chosen by PMV and by GridSearchCV (``fitaudit reproduce pmv-tree-depth``).

Zhang et al. (2019), experiment (c) of the PMV reproductions in the user
guide, on breast cancer and digits. Each of 5 runs splits the data 70/30
(stratified, seed of the run), selects max_depth in 1..15 or None on the
training part with :class:`~fitaudit.pmv.PMVSearchCV` (rates 0.05..0.5),
with its single-rate mutation criterion (eta = 0.2) and with
``GridSearchCV`` (10-fold, shuffled), refits, and records the held-out
accuracy of each choice. The spread of the chosen depth over the runs
measures stability. Repeated on a stratified 5% subsample of the training
part ("small data"); there, rates too small to flip one label of the
smallest class are dropped (reported).

Each (data set, size) setting is one checkpointed unit of a
:class:`~fitaudit.checkpoint.CheckpointStore`, keyed by the settings, the
seed and the data.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.model_selection import GridSearchCV, StratifiedKFold, train_test_split
from sklearn.tree import DecisionTreeClassifier

from fitaudit.experiments.base import ParallelOptions, Run
from fitaudit.pmv.catalogue import load_dataset
from fitaudit.pmv.perturb import DEFAULT_RATES, flip_counts
from fitaudit.pmv.search import PMVSearchCV
from fitaudit.results import Result

#: selection methods compared: key and table label
SELECTORS = (("pmv", "PMV"), ("mutation", "mutation (eta 0.2)"), ("grid", "GridSearchCV"))

#: sizes of the two modes
MODES: dict[str, dict[str, Any]] = {
    "quick": {"depths": [1, 2, 4, 8, None], "runs": 2, "folds": 3, "datasets": ["breast_cancer"]},
    "full": {"depths": [*range(1, 16), None], "runs": 5, "folds": 10, "datasets": ["breast_cancer", "digits"]},
}

#: the two training-set sizes: label and fraction of the 70% training part
SIZES = (("full", 1.0), ("5%", 0.05))

if TYPE_CHECKING:
    from typing import Unpack


@dataclasses.dataclass(repr=False)
class TreeDepthReproduction(Result):
    """Depths chosen by each method over repeated splits.

    Attributes
    ----------
    experiment : str
        ``"pmv-tree-depth"``.
    mode : {"quick", "full"}
    depths : list
        The grid of max_depth (``None`` = unbounded).
    settings : list of dict
        One per (data set, size): ``dataset``, ``size``, ``n_train``,
        ``rates_used`` (per run), ``chosen_depth[method]`` and
        ``test_accuracy[method]`` (one entry per run, methods ``pmv``,
        ``mutation``, ``grid``), ``mean_pmv_curve`` and ``mean_cv_curve``
        (mean over runs, one entry per depth).
    seconds : float
        Wall time of this call (less when resumed).
    """

    experiment: str
    mode: str
    depths: list[Any]
    settings: list[dict[str, Any]]
    seconds: float

    def _summary_fields(self) -> list[str]:
        return ["mode", "depths", "seconds"]

    def depth_cap(self) -> int:
        """The number standing for ``None`` in numeric summaries (one more than the largest depth)."""
        return max(d for d in self.depths if d is not None) + 1

    def numeric_depths(self, depths: list[Any]) -> np.ndarray:
        """``depths`` as numbers, ``None`` counted as :meth:`depth_cap`."""
        return np.array([self.depth_cap() if d is None else d for d in depths], dtype=float)


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
    random_state: int,
    n_jobs: Any,
    progress: bool = False,
    checkpoint_dir: Any = None,
) -> dict[str, Any]:
    """The three selections over ``runs`` repeated splits; chosen depths and held-out accuracies."""
    chosen: dict[str, list[Any]] = {key: [] for key, _ in SELECTORS}
    accuracy: dict[str, list[float]] = {key: [] for key, _ in SELECTORS}
    pmv_curves, cv_curves, rates_used = [], [], []
    for run in range(runs):
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=0.3, stratify=y, random_state=random_state + run
        )
        if fraction < 1:
            X_train, _, y_train, _ = train_test_split(
                X_train, y_train, train_size=fraction, stratify=y_train, random_state=random_state + run
            )
        rates = usable_rates(y_train, DEFAULT_RATES)
        rates_used.append(rates)
        tree = DecisionTreeClassifier(random_state=random_state + run)
        grid = {"max_depth": depths}
        pmv = PMVSearchCV(tree, grid, rates=rates, random_state=random_state + run, n_jobs=n_jobs).fit(
            X_train, y_train
        )
        mutation = PMVSearchCV(
            tree, grid, criterion="mutation", random_state=random_state + run, n_jobs=n_jobs
        ).fit(X_train, y_train)
        splitter = StratifiedKFold(
            min(folds, int(np.bincount(y_train).min())), shuffle=True, random_state=random_state + run
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


def reproduce_pmv_tree_depth(**options: Unpack[ParallelOptions]) -> TreeDepthReproduction:
    """Run every (data set, size) setting (see the module docstring).

    ``options``: :class:`~fitaudit.experiments.base.ParallelOptions` (the
    searches show no progress bar). Mode ``"quick"``: breast cancer, depths
    1, 2, 4, 8, None, 2 runs, 3 folds (seconds); ``"full"``: the paper's
    grid, 5 runs, 10 folds, two data sets. Run ``r`` splits and perturbs with
    seed ``random_state + r``.
    """
    run = Run(MODES, **options)
    mode, setting = run.mode, run.settings
    records = []
    for dataset in setting["datasets"]:
        X, y = load_dataset(dataset)
        for label, fraction in SIZES:
            record = run.unit(
                one_setting, X, y, fraction=fraction, runs=setting["runs"], depths=setting["depths"],
                folds=setting["folds"], random_state=run.random_state,
            )
            records.append({"dataset": dataset, "size": label, **record})
    return TreeDepthReproduction(
        experiment="pmv-tree-depth",
        mode=mode,
        depths=list(setting["depths"]),
        settings=records,
        seconds=run.seconds(),
    )
