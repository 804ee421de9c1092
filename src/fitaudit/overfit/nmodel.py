"""The N-model test (randomised training).

Werpachowski, Gyorgy, Szepesvari (NeurIPS 2019), Sec. 3: retrain the same
procedure N times to get f_1..f_N, each with its own AEG g_j; for every
example average the pairwise terms, Tbar_i = (1/N) sum_j T_{i,g_j}(f_j), and
run the pairwise test on the Tbar_i (one p-value p_N). Each run's own
p-value p_j is reported next to its error rate R_S(f_j): picking the best
seed shows up there.

The Tbar_i lie in the same range as the T_i, so U is the largest range of
the N AEGs.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from fitaudit._errors import InputError
from fitaudit._validation import as_array, check_float, check_int
from fitaudit.models import as_classifier
from fitaudit.models.labels import ChanceCheck, chance_check
from fitaudit.overfit.aeg import AdversarialExampleGenerator
from fitaudit.overfit.decision import nmodel_contradiction, overfit_verdict
from fitaudit.overfit.g3 import G3ShiftTest
from fitaudit.overfit.independence import (
    IndependenceTestResult,
    PairwiseTestResult,
    check_delta,
    ci_test,
    pairwise_test_from_terms,
)
from fitaudit.overfit.one_model import (
    AEGSpec,
    aeg_warnings,
    check_examples,
    density_check,
    example_terms,
    resolve_aeg,
)
from fitaudit.parallel import parallel_map
from fitaudit.random import RandomState, spawn_seeds
from fitaudit.stats import bernstein_pvalue, sample_mean_and_variance
from fitaudit.verdict import Verdict


@dataclasses.dataclass(repr=False)
class NModelTestResult(IndependenceTestResult):
    """Result of the N-model test.

    Attributes
    ----------
    statistic : float
        Tbar = (1/m) sum_i Tbar_i.
    pvalue : float
        p_N, the pairwise-test p-value on the Tbar_i.
    reject : bool
        ``pvalue < delta``.
    delta, U, m : level, range, number of examples.
    n_models : int
        N.
    pairwise : PairwiseTestResult
        The pairwise test on the Tbar_i (its risks are averages over runs).
    per_model : list of dict
        One entry per run: ``seed`` (None for given models), ``risk_plain``
        R_S(f_j), ``risk_adversarial`` R_g(f_j), ``pvalue`` p_j,
        ``statistic`` T(f_j), ``ci_pvalue`` (the confidence-interval test
        of run j alone), ``n_success`` and ``evaluations`` (model
        evaluations of its AEG).
    warnings : list of str
        Conditions under which the result must be read with care (those of
        :func:`~fitaudit.overfit.one_model.overfit_test`, from every run).
    g3 : G3ShiftTest or None
        The check of (G3) on the sample, as in
        :class:`~fitaudit.overfit.one_model.OverfitTestResult`.
    chance : ChanceCheck or None
        The chance check (:func:`fitaudit.models.labels.chance_check`) of
        the run with the smallest Cohen's kappa: one run at chance (a wrong
        class order or pipeline) spoils the average.
    moves : dict or None
        The translational AEG's set V, as in
        :class:`~fitaudit.overfit.one_model.OverfitTestResult`.
    """

    n_models: int
    pairwise: PairwiseTestResult
    per_model: list[dict[str, Any]]
    warnings: list[str]
    g3: G3ShiftTest | None = None
    chance: ChanceCheck | None = None
    moves: dict[str, Any] | None = None

    def verdict(self, **context: Any) -> Verdict:
        """The test's decision (:func:`fitaudit.overfit.decision.overfit_verdict`)."""
        return overfit_verdict(self, **context)

    def contradiction(self) -> str | None:
        """Where a saved copy disagrees with its pairwise test (:func:`fitaudit.overfit.decision.nmodel_contradiction`)."""
        return nmodel_contradiction(self)


def worst_chance(predictions: Sequence[np.ndarray | None], labels: np.ndarray) -> ChanceCheck | None:
    """:func:`~fitaudit.models.labels.chance_check` of the run nearest chance (smallest kappa).

    None when a run's predictions are unknown (vectors read from a
    checkpoint written before they were kept).
    """
    if any(p is None for p in predictions):
        return None
    checks = [chance_check(labels, p) for p in predictions if p is not None]
    return min(checks, key=lambda check: check.kappa)


def _run_terms(
    model: Any, x: np.ndarray, y: np.ndarray, aeg: AEGSpec, checkpoint_dir: str | os.PathLike[str] | None = None
) -> dict[str, Any]:
    """Evaluate one model: its zero-one and weighted adversarial losses, and its range U."""
    model = as_classifier(model)
    generator = resolve_aeg(aeg, model)
    points, labels = check_examples(model, x, y, generator)
    terms = example_terms(model, points, labels, generator, checkpoint_dir=checkpoint_dir)
    n_success = int(np.sum(terms["success"]))
    return {
        "loss": terms["loss"],
        "weighted": terms["weighted_adv_loss"],
        "n_success": n_success,
        "evaluations": int(terms["evaluations"]),
        "U": float(generator.pairwise_range),
        "warnings": aeg_warnings(generator, n_success),
        "prediction": terms.get("prediction"),
    }


def _retrain_and_run(
    seed: int, *, fit_fn: Callable[[int], Any], x: np.ndarray, y: np.ndarray, aeg: AEGSpec
) -> dict[str, Any]:
    run = _run_terms(fit_fn(seed), x, y, aeg)
    return {**run, "seed": seed}


def combine_runs(
    runs: Sequence[dict[str, Any]], *, delta: float, U: float | None = None
) -> NModelTestResult:
    """The N-model test from per-run loss vectors (``loss``, ``weighted``, ``U``, ...)."""
    losses = np.array([np.asarray(r["loss"], dtype=np.float64) for r in runs])
    weighted = np.array([np.asarray(r["weighted"], dtype=np.float64) for r in runs])
    warnings = list(dict.fromkeys(note for r in runs for note in r.get("warnings", [])))
    U = max(float(r["U"]) for r in runs) if U is None else check_float(U, "U", low=0.0, low_inclusive=False)
    terms = weighted - losses
    per_model = []
    for r, t in zip(runs, terms):
        statistic, variance = sample_mean_and_variance(t, "terms")
        per_model.append(
            {
                "seed": r.get("seed"),
                "risk_plain": float(np.mean(r["loss"])),
                "risk_adversarial": float(np.mean(r["weighted"])),
                "pvalue": bernstein_pvalue(statistic, variance, len(t), U),
                "statistic": statistic,
                "ci_pvalue": ci_test(r["loss"], r["weighted"], delta=delta).pvalue,
                "n_success": int(r["n_success"]),
                "evaluations": int(r.get("evaluations", 0)),
            }
        )
    pairwise = pairwise_test_from_terms(
        terms.mean(axis=0), U=U, delta=delta, plain=losses.mean(axis=0), weighted=weighted.mean(axis=0)
    )
    return NModelTestResult(
        statistic=pairwise.statistic,
        pvalue=pairwise.pvalue,
        reject=pairwise.reject,
        delta=delta,
        U=U,
        m=pairwise.m,
        n_models=len(runs),
        pairwise=pairwise,
        per_model=per_model,
        warnings=warnings,
    )


def n_model_test(
    models: Sequence[Any],
    x: Any,
    y: Any,
    aeg: AEGSpec,
    *,
    delta: float = 0.05,
    U: float | None = None,
    progress: bool = False,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    check_density: bool = True,
) -> NModelTestResult:
    """N-model test on already trained models f_1..f_N.

    Werpachowski, Gyorgy, Szepesvari (NeurIPS 2019), Sec. 3: the pairwise
    test on Tbar_i = (1/N) sum_j T_{i,g_j}(f_j).

    Parameters
    ----------
    models : sequence of classifiers
        N >= 1 models from the same (randomised) training procedure.
    x, y : the sample they are all scored on.
    aeg : AdversarialExampleGenerator or callable
        One AEG for all, or ``aeg(model)`` building each g_j.
    delta : float
        Level.
    U : float, optional
        Range of the terms; default the largest ``pairwise_range`` of the AEGs.
    progress : bool
        A progress bar over the models (stderr).
    checkpoint_dir : path, optional
        Keep each model's AEG run there (keyed by the model, the sample and
        the AEG), so an interrupted test resumes after the last finished model.
    check_density : bool
        Check (G3) on the sample first when the AEG assumes it (as
        :func:`~fitaudit.overfit.one_model.overfit_test` does); the result's ``g3``.
    """
    delta = check_delta(delta, high=0.5)  # the per-run CI test needs delta < 1/2
    if not isinstance(models, Sequence) or isinstance(models, (str, bytes)):
        raise InputError(
            f"`models` must be a list of models f_1..f_N; got a single {type(models).__name__} "
            "(for one model use overfit_test, or pass [model])."
        )
    models = list(models)
    if not models:
        raise InputError("`models` must hold at least one model; got none.")
    runs = [
        _run_terms(model, x, y, aeg, checkpoint_dir)
        for model in tqdm(models, desc="N-model test", unit="model", disable=not progress)
    ]
    result = combine_runs(runs, delta=delta, U=U)
    first = as_classifier(models[0])
    generator = resolve_aeg(aeg, first)
    result.moves = generator.moves()
    if check_density:
        result.g3 = density_check(generator, check_examples(first, x, y, generator)[0])
    result.chance = worst_chance([run.get("prediction") for run in runs], as_array(y, "y"))
    return result


def n_model_test_retrain(
    fit_fn: Callable[[int], Any],
    x: Any,
    y: Any,
    aeg: AEGSpec,
    *,
    n_models: int,
    delta: float = 0.05,
    U: float | None = None,
    random_state: RandomState = 0,
    n_jobs: int | None = None,
    progress: bool = False,
    checkpoint_dir: str | os.PathLike[str] | None = None,
) -> NModelTestResult:
    """N-model test that retrains the model N times with different seeds.

    Each run calls ``fit_fn(seed)`` (a picklable module-level function or a
    :func:`functools.partial`), builds its AEG and scores the sample, through
    :func:`fitaudit.parallel.parallel_map`: ``n_jobs`` processes locally, a
    Dask cluster inside ``joblib.parallel_config(backend="dask")``, and with
    ``checkpoint_dir`` finished runs are kept, keyed by ``fit_fn`` (with the
    arguments bound to it), the sample, the AEG and the seed: a rerun resumes
    after the last finished run, a changed input never reuses one.

    Parameters
    ----------
    fit_fn : callable
        ``fit_fn(seed) -> model``; must be deterministic given the seed.
    x, y : the sample every model is scored on.
    aeg : AdversarialExampleGenerator or callable
        One AEG for all, or ``aeg(model)`` building each g_j.
    n_models : int
        N.
    delta : float
    U : float, optional
    random_state : int, Generator or None, default 0
        Source of the N seeds (same seed, same result, whatever ``n_jobs``).
    n_jobs, progress, checkpoint_dir :
        Passed to :func:`fitaudit.parallel.parallel_map`.
    """
    if not callable(fit_fn):
        raise InputError(f"`fit_fn` must be a function of a seed; got {type(fit_fn).__name__}.")
    delta = check_delta(delta, high=0.5)  # the per-run CI test needs delta < 1/2
    n_models = check_int(n_models, "n_models", minimum=1)
    seeds = spawn_seeds(random_state, n_models)
    task = functools.partial(_retrain_and_run, fit_fn=fit_fn, x=as_array(x, "x"), y=as_array(y, "y"), aeg=aeg)
    runs = parallel_map(
        task, seeds, n_jobs=n_jobs, progress=progress, desc="N-model test", checkpoint_dir=checkpoint_dir
    )
    result = combine_runs(runs, delta=delta, U=U)
    result.moves = aeg.moves() if isinstance(aeg, AdversarialExampleGenerator) else None  # a factory: per model
    result.chance = worst_chance([run.get("prediction") for run in runs], as_array(y, "y"))
    return result
