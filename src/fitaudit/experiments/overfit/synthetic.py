"""The synthetic experiment of Werpachowski et al. (2019), Fig. 4 (``fitaudit reproduce overfit-synthetic``).

The synthetic experiment of "Detecting overfitting via adversarial examples"
(NeurIPS 2019, Sec. 4 and Appendix A): Gaussian-margin data in d = 500
(:class:`fitaudit.data.gaussian_margin.GaussianMargin`), logistic models
trained with RMSProp (:func:`fitaudit.overfit.train_logistic_models`), the
linear-gradient AEG with exact weights, and the N-model test for
N = 1, 2, 10, 25, 100. The average p-value over repetitions is plotted against
the step eps (log grid 1e-2 .. 1e2) for

* the independent case: 500 fresh training points, a test set of 10,000;
* the dependent case: penalty 1e4 w_1^2, a test set of 1,000 points of which
  the first 500 (a uniformly random half, since the points are i.i.d.) are
  the training set. This is our reading of "50% of the test data used for
  training".

Each repetition draws new data and trains a pool of max(N) models with
different seeds (initialisation and batch order) on the same training set;
the N-model test with N models uses the first N of the pool, so the curves for
different N share their runs. U = 2 (the linear step changes the density, so
h_g may exceed 1/2; see :class:`fitaudit.overfit.LinearGradientAEG`).

Modes (the paper's full protocol is 100 repetitions x 100 models x 50,000
RMSProp steps for each case):

* ``"quick"``: 2 repetitions, N up to 10, 300 steps, 9 step sizes (seconds;
  used by the tests);
* ``"medium"`` (the default): 10 repetitions, all N, 1,000 steps, 17 step
  sizes (3 minutes on the shared 2-core machine, one job);
* ``"full"``: 100 repetitions, all N, 50,000 steps, 17 step sizes.
  Training dominates: a pool of 100 models costs 4.8 ms per RMSProp step on
  one core of the 2-core development machine when lightly loaded (18 ms under
  heavy load), i.e. about 250 s per pool and 14 hours for the 200 pools in one
  job (``benchmarks/bench_overfit_synthetic.py`` prints the estimate for the
  machine at hand). ``n_jobs`` divides that by the number of free cores;
  rerun with the same ``checkpoint_dir`` to resume after an interruption.

Every (case, repetition) is one checkpointed unit of
:func:`fitaudit.parallel.parallel_map`, keyed by the unit function and its
item (case, repetition, seed and every setting), so a changed setting never
reuses an old unit. Figures and tables: :mod:`fitaudit.report.reproductions`.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np

from fitaudit._validation import check_int
from fitaudit.data.gaussian_margin import GaussianMargin
from fitaudit.experiments.base import ParallelOptions, Run
from fitaudit.overfit.linear_gradient import LinearProjections, linear_gradient_step
from fitaudit.overfit.logistic import train_logistic_models
from fitaudit.parallel import parallel_map
from fitaudit.random import spawn_seeds
from fitaudit.results import Result
from fitaudit.stats import bernstein_pvalue

if TYPE_CHECKING:
    from typing import Unpack

CASES = ("dependent", "independent")

#: settings of the three modes
MODES: dict[str, dict[str, Any]] = {
    "quick": {"repetitions": 2, "n_values": [1, 2, 10], "steps": 300, "n_eps": 9},
    "medium": {"repetitions": 10, "n_values": [1, 2, 10, 25, 100], "steps": 1000, "n_eps": 17},
    "full": {"repetitions": 100, "n_values": [1, 2, 10, 25, 100], "steps": 50_000, "n_eps": 17},
}

#: fixed parts of the protocol (paper, Appendix A)
PROTOCOL: dict[str, Any] = {
    "d": 500,
    "n_train": 500,
    "m_dependent": 1000,
    "m_independent": 10_000,
    "penalty_dependent": 1e4,
    "batch_size": 100,
    "learning_rate": 0.01,
    "U": 2.0,
}


def run_unit(item: dict[str, Any]) -> dict[str, Any]:
    """One repetition of one case: data, a pool of models, p-values for every N and eps.

    Returns a JSON-safe dict with ``pvalues[n_index][eps_index]``, the pool's
    error rates on the test set and the fraction of successful adversarial
    examples per eps (averaged over the pool).
    """
    config = item["config"]
    rng = np.random.default_rng(item["seed"])
    dist = GaussianMargin(config["d"])
    dependent = item["case"] == "dependent"
    if dependent:
        x, y = dist.sample(config["m_dependent"], random_state=rng)
        x_train, y_train = x[: config["n_train"]], y[: config["n_train"]]
    else:
        x_train, y_train = dist.sample(config["n_train"], random_state=rng)
        x, y = dist.sample(config["m_independent"], random_state=rng)
    n_values = config["n_values"]
    models = train_logistic_models(
        x_train,
        y_train,
        n_models=max(n_values),
        steps=config["steps"],
        batch_size=config["batch_size"],
        learning_rate=config["learning_rate"],
        first_coordinate_penalty=config["penalty_dependent"] if dependent else 0.0,
        random_state=rng,
    )
    weights = np.array([model.coef_ for model in models])
    biases = np.array([model.intercept_ for model in models])
    proj = LinearProjections.compute(weights, biases, x, y)
    m = len(y)
    pvalues = np.empty((len(n_values), len(config["eps"])))
    success = np.empty(len(config["eps"]))
    for e, eps in enumerate(config["eps"]):
        step = linear_gradient_step(dist, proj, eps)
        running = np.cumsum(step.weighted_adv_loss - step.loss, axis=0)
        for k, n in enumerate(n_values):
            terms = running[n - 1] / n
            mean = float(terms.mean())
            pvalues[k, e] = bernstein_pvalue(mean, float(np.mean((terms - mean) ** 2)), m, config["U"])
        success[e] = float(np.mean((step.loss == 0) & (step.adv_loss == 1)))
    error_rates = (proj.score > 0) != (proj.label == 1)
    return {
        "case": item["case"],
        "repetition": item["repetition"],
        "pvalues": pvalues.tolist(),
        "error_rates": error_rates.mean(axis=1).tolist(),
        "success_rate": success.tolist(),
    }


@dataclasses.dataclass(repr=False)
class SyntheticReproductionResult(Result):
    """Average p-values of the N-model test against eps (Fig. 4).

    Attributes
    ----------
    experiment : str
        ``"overfit-synthetic"``.
    mode : str
    config : dict
        Every setting of the run.
    eps : list of float
    n_values : list of int
    mean_pvalue : dict
        ``mean_pvalue[case][n_index][eps_index]``, averaged over repetitions.
    rejection_rate : dict
        Same layout: the fraction of repetitions with p < 0.05.
    mean_error_rate : dict
        Per case, the test-set error rate averaged over models and repetitions.
    mean_success_rate : dict
        Per case and eps, the fraction of successful adversarial examples.
    seconds : float
        Wall-clock time of this invocation (finished checkpoints excluded).
    """

    experiment: str
    mode: str
    config: dict[str, Any]
    eps: list[float]
    n_values: list[int]
    mean_pvalue: dict[str, list[list[float]]]
    rejection_rate: dict[str, list[list[float]]]
    mean_error_rate: dict[str, float]
    mean_success_rate: dict[str, list[float]]
    seconds: float

    def _summary_fields(self) -> list[str]:
        return ["mode", "n_values", "mean_error_rate", "seconds"]

    def rejected_eps(self, case: str, n_index: int = 0) -> list[float]:
        """The step sizes at which the mean p-value of ``case`` is below 0.05 (N = ``n_values[n_index]``)."""
        return [e for e, p in zip(self.eps, self.mean_pvalue[case][n_index]) if p < 0.05]


def reproduce_overfit_synthetic(
    *, repetitions: int | None = None, steps: int | None = None, **options: Unpack[ParallelOptions]
) -> SyntheticReproductionResult:
    """Run the synthetic experiment (see the module docstring).

    Parameters
    ----------
    repetitions, steps : int, optional
        Override the mode's number of repetitions / RMSProp steps.
    **options
        :class:`~fitaudit.experiments.base.ParallelOptions`; ``mode`` is one
        of ``"quick"``, ``"medium"`` (the default here) and ``"full"`` (the
        module docstring); Dask runs the units through ``joblib.parallel_config``.
    """
    options.setdefault("mode", "medium")
    run = Run(MODES, **options)
    mode, settings = run.mode, dict(run.settings)
    if repetitions is not None:
        settings["repetitions"] = check_int(repetitions, "repetitions", minimum=1)
    if steps is not None:
        settings["steps"] = check_int(steps, "steps", minimum=1)
    config = {**PROTOCOL, **settings, "eps": np.logspace(-2, 2, settings["n_eps"]).tolist()}
    config["random_state"] = check_int(run.random_state, "random_state", minimum=0)
    seeds = spawn_seeds(config["random_state"], 2 * config["repetitions"])
    items = [
        {"case": case, "repetition": r, "seed": seeds[2 * r + c], "config": config}
        for r in range(config["repetitions"])
        for c, case in enumerate(CASES)
    ]
    units = parallel_map(
        run_unit,
        items,
        n_jobs=run.n_jobs,
        progress=run.progress,
        desc="overfit-synthetic",
        checkpoint_dir=run.checkpoint_dir,
    )
    seconds = run.seconds()
    by_case = {case: [u for u in units if u["case"] == case] for case in CASES}
    pvals = {case: np.array([u["pvalues"] for u in by_case[case]]) for case in CASES}
    return SyntheticReproductionResult(
        experiment="overfit-synthetic",
        mode=mode,
        config=config,
        eps=config["eps"],
        n_values=config["n_values"],
        mean_pvalue={case: pvals[case].mean(axis=0).tolist() for case in CASES},
        rejection_rate={case: (pvals[case] < 0.05).mean(axis=0).tolist() for case in CASES},
        mean_error_rate={
            case: float(np.mean([u["error_rates"] for u in by_case[case]])) for case in CASES
        },
        mean_success_rate={
            case: np.mean([u["success_rate"] for u in by_case[case]], axis=0).tolist()
            for case in CASES
        },
        seconds=seconds,
    )
