"""Hyper-parameter search by perturbed model validation, as a scikit-learn search.

:class:`PMVSearchCV` is a :class:`sklearn.model_selection._search.BaseSearchCV`
whose candidates are ranked by the PMV score |k_S| (Zhang et al. 2019,
Sec. 3; docs/pmv.md#the-score) instead of a cross-validated score.

Design choice
-------------
BaseSearchCV's ``fit`` evaluates a candidate on cross-validation *splits* of
one fixed ``y`` and refits on the same ``(X, y)``. PMV has no split and needs
a *different* ``y`` per fit (one label-flipped copy per noise rate). Making
the splits carry labels would require stacking copies of ``X`` (memory x k)
and would refit the best candidate on the stacked noisy data. So this class
keeps BaseSearchCV's contract and extension point and replaces only ``fit``:

* ``_run_search(evaluate_candidates)`` is the hook, exactly as in
  GridSearchCV (a subclass may call ``evaluate_candidates`` repeatedly for a
  sequential search); ``evaluate_candidates(candidate_params)`` returns the
  results so far, formatted like ``cv_results_``;
* every candidate is trained on the same perturbed sets (one "split" per
  rate and repeat), through :func:`fitaudit.parallel.parallel_map` (joblib,
  so ``n_jobs`` and ``joblib.parallel_config(backend="dask")`` work);
* ``cv_results_`` has the usual keys (``params``, ``param_*``,
  ``mean_fit_time``, ...); ``mean_test_score`` / ``std_test_score`` /
  ``rank_test_score`` hold the selection criterion (|k_S| by default, mean
  and spread over repeats), because that is what BaseSearchCV's
  ``best_index_``/``best_score_`` logic reads. There is no held-out set:
  "test_score" is the PMV score. The per-rate training accuracies are in
  ``mean_accuracy_r{rate}`` / ``std_accuracy_r{rate}``, the slope in
  ``slope`` and the risk bound (at the ``delta`` given) in ``bound``; every
  row is read from the candidate's :class:`~fitaudit.pmv.PMVResult` (the
  same summary :func:`~fitaudit.pmv.pmv_score` returns, kept in
  ``pmv_results_``);
* ``best_estimator_`` is refit on the original ``(X, y)``; prediction
  methods, ``classes_``, ``n_features_in_`` and ``score`` (accuracy) are
  BaseSearchCV's own.

BaseSearchCV is private to scikit-learn, so pyproject.toml bounds
scikit-learn below the next minor release that CI has not yet tested
(``tests/pmv/test_search.py`` runs this class against the newest release
the bound allows).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
from scipy.stats import rankdata
from sklearn.base import clone
from sklearn.metrics import get_scorer
from sklearn.model_selection import ParameterGrid
from sklearn.model_selection._search import BaseSearchCV
from sklearn.utils.metadata_routing import MetadataRouter, MethodMapping

from fitaudit._validation import check_float, check_int
from fitaudit.pmv._engine import (
    MAX_REPEATS,
    Evaluation,
    Plan,
    check_error_score,
    check_problem,
    evaluate,
    make_plan,
    resolve_rates,
)
from fitaudit.pmv.cv_check import check_cv_check, cv_accuracies, cv_choice
from fitaudit.pmv.score import summarize

__all__ = ["MAX_REPEATS", "PMVSearchCV"]


def _masked_param_columns(candidates: list[dict[str, Any]]) -> dict[str, np.ma.MaskedArray]:
    """``param_<name>`` columns of ``cv_results_``: masked where a candidate lacks the parameter."""
    names = sorted({name for params in candidates for name in params})
    columns = {}
    for name in names:
        column = np.ma.MaskedArray(np.empty(len(candidates), dtype=object), mask=True)
        for i, params in enumerate(candidates):
            if name in params:
                column[i] = params[name]
        columns[f"param_{name}"] = column
    return columns


class PMVSearchCV(BaseSearchCV):
    """Select hyper-parameters by the perturbed-model-validation score |k_S|.

    Each candidate is retrained on the original sample and on label-flipped
    copies (``1 + n_rates * n_repeats`` fits); the candidate whose training
    accuracy falls fastest with the noise rate (largest |k_S|) is selected
    (Zhang, Barr, Guedj, Harman, Shawe-Taylor 2019, Sec. 3). No data split.

    Parameters
    ----------
    estimator : scikit-learn classifier or Pipeline ending in one
    param_grid : dict or list of dicts
        As for :class:`sklearn.model_selection.GridSearchCV`.
    rates : sequence of float in (0, 0.5], optional
        Noise rates; default 0.05, ..., 0.50 (``[0.2]`` for the mutation score).
    n_repeats : int, default 1
        Perturbations per rate (the spread over them is ``std_test_score``).
    scheme : {"next", "random"}, default "next"
        Multi-class relabelling (:mod:`fitaudit.pmv.perturb`).
    criterion : {"pmv", "mutation"}, default "pmv"
        Rank by |k_S| or by the single-rate mutation-validation score.
    refit : bool or callable, default True
        Refit the best candidate on the original data (``best_estimator_``);
        a callable takes ``cv_results_`` and returns the best index, as in
        scikit-learn.
    n_jobs : int, optional
        Parallel fits (joblib).
    error_score : "raise" or float, default nan
        Accuracy recorded for a fit that fails (a warning says so).
    verbose : int, default 0
        Above 0, a progress bar of the fits.
    random_state : None, int, SeedSequence or Generator, default 0
        Seeds the label perturbations shared by all candidates and every
        ``random_state`` parameter of a candidate left at None.
    delta : float in (0, 1), default 0.05
        Confidence of the risk bound in ``cv_results_["bound"]``.
    cv_check : bool, default False
        Also score every candidate by 5-fold cross-validation on the same
        data (:mod:`fitaudit.pmv.cv_check`; 5 more fits per candidate):
        ``cv_results_["cv_accuracy"]``, ``cv_best_index_`` and ``cv_check_``.

    Attributes
    ----------
    cv_results_ : dict of arrays
        See the module docstring for the keys.
    best_estimator_, best_score_, best_params_, best_index_, refit_time_
        As in GridSearchCV; ``best_score_`` is the best criterion value.
    rates_ : ndarray
        0 followed by the noise rates used.
    pmv_results_ : list of PMVResult
        The full result of every candidate (in ``cv_results_`` order): the
        rows of ``cv_results_`` are read from these.
    scorer_ : callable
        Accuracy, used by :meth:`score` on new data.
    multimetric_ : bool
        Always False.
    cv_best_index_ : int
        With ``cv_check=True``: the candidate 5-fold cross-validation
        chooses (the largest ``cv_results_["cv_accuracy"]``, first on ties).
    cv_check_ : dict
        With ``cv_check=True``: both choices (``best``, ``cv_best``: their
        parameters as text) and their cross-validated accuracies
        (``cv_accuracy_of_best``, ``cv_accuracy_of_cv_best``), read by
        :func:`fitaudit.report.pmv_words.cv_check_text`.
    """

    def __init__(
        self,
        estimator: Any,
        param_grid: Any,
        *,
        rates: Any = None,
        n_repeats: int = 1,
        scheme: str = "next",
        criterion: str = "pmv",
        refit: bool | Callable[[dict[str, Any]], int] = True,
        n_jobs: int | None = None,
        error_score: Any = np.nan,
        verbose: int = 0,
        random_state: Any = 0,
        delta: float = 0.05,
        cv_check: bool = False,
    ) -> None:
        self.estimator = estimator
        self.param_grid = param_grid
        self.rates = rates
        self.n_repeats = n_repeats
        self.scheme = scheme
        self.criterion = criterion
        self.refit = refit
        self.n_jobs = n_jobs
        self.error_score = error_score
        self.verbose = verbose
        self.random_state = random_state
        self.delta = delta
        self.cv_check = cv_check

    def _run_search(self, evaluate_candidates: Callable[..., dict[str, Any]]) -> None:
        """Evaluate every candidate of ``param_grid`` (the GridSearchCV schedule)."""
        evaluate_candidates(ParameterGrid(self.param_grid))

    def fit(self, X: Any, y: Any = None, **fit_params: Any) -> PMVSearchCV:
        """Score every candidate by PMV on ``(X, y)`` and refit the best one.

        Parameters
        ----------
        X : array-like of shape (n_samples, ...)
        y : array-like of shape (n_samples,)
            Class labels.
        **fit_params
            Passed to every ``fit`` of the estimator.

        Returns
        -------
        self
        """
        X, labels = check_problem(self.estimator, X, y)
        rates = resolve_rates(self.rates, self.criterion)
        check_float(self.delta, "delta", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
        error_score = check_error_score(self.error_score)
        check_int(self.verbose, "verbose", minimum=0)
        cv_check = check_cv_check(self.cv_check)
        plan = make_plan(
            labels,
            rates,
            n_repeats=self.n_repeats,
            scheme=self.scheme,
            random_state=self.random_state,
        )
        base_estimator = clone(self.estimator)
        all_params: list[dict[str, Any]] = []
        all_evaluations: list[Evaluation] = []
        all_more_results: dict[str, list[Any]] = {}
        results: dict[str, Any] = {}

        def evaluate_candidates(
            candidate_params: Iterable[Mapping[str, Any]],
            more_results: Mapping[str, list[Any]] | None = None,
        ) -> dict[str, Any]:
            nonlocal results
            candidates = [dict(p) for p in candidate_params]
            if not candidates:
                return results
            estimators = [
                clone(base_estimator).set_params(**clone(p, safe=False)) for p in candidates
            ]
            all_evaluations.append(
                evaluate(
                    estimators,
                    X,
                    plan,
                    fit_params=fit_params,
                    error_score=error_score,
                    n_jobs=self.n_jobs,
                    progress=self.verbose > 0,
                )
            )
            all_params.extend(candidates)
            for key, values in (more_results or {}).items():
                all_more_results.setdefault(key, []).extend(values)
            results = self._format_pmv_results(all_params, plan, all_evaluations)
            results.update({key: np.asarray(v) for key, v in all_more_results.items()})
            return results

        self._run_search(evaluate_candidates)
        if not all_params:
            raise ValueError("No candidates were evaluated: `param_grid` is empty.")
        if cv_check:
            self._check_against_cv(results, base_estimator, X, labels, fit_params)
        self.rates_ = plan.rates
        self.multimetric_ = False
        self.scorer_ = get_scorer("accuracy")
        self.best_index_ = int(self._select_best_index(self.refit, "score", results))
        if not callable(self.refit):
            self.best_score_ = float(results["mean_test_score"][self.best_index_])
        self.best_params_ = results["params"][self.best_index_]
        if self.refit:
            self.best_estimator_ = clone(base_estimator).set_params(
                **clone(self.best_params_, safe=False)
            )
            start = time.perf_counter()
            self.best_estimator_.fit(X, labels, **fit_params)
            self.refit_time_ = time.perf_counter() - start
            if hasattr(self.best_estimator_, "feature_names_in_"):
                self.feature_names_in_ = self.best_estimator_.feature_names_in_
        self.cv_results_ = results
        if cv_check:
            self.cv_check_ = {"best": str(self.best_params_), "cv_best": str(results["params"][self.cv_best_index_]),
                              "cv_accuracy_of_best": float(results["cv_accuracy"][self.best_index_]),
                              "cv_accuracy_of_cv_best": float(results["cv_accuracy"][self.cv_best_index_])}
        return self

    def _check_against_cv(self, results: dict[str, Any], base: Any, X: Any, y: np.ndarray,
                          fit_params: dict[str, Any]) -> None:
        """Every candidate's mean 5-fold cross-validated accuracy (``cv_results_["cv_accuracy"]``) and
        cross-validation's choice (``cv_best_index_``)."""
        estimators = [clone(base).set_params(**clone(params, safe=False)) for params in results["params"]]
        results["cv_accuracy"] = cv_accuracies(estimators, X, y, random_state=self.random_state, n_jobs=self.n_jobs,
                                               fit_params=fit_params)
        self.cv_best_index_ = cv_choice(results["cv_accuracy"])

    def _format_pmv_results(
        self, candidates: list[dict[str, Any]], plan: Plan, evaluations: list[Evaluation]
    ) -> dict[str, Any]:
        """Assemble ``cv_results_`` (one row per candidate) from each candidate's :class:`PMVResult`."""
        evaluation = Evaluation(
            *(np.vstack([getattr(e, f.name) for e in evaluations]) for f in dataclasses.fields(Evaluation))
        )
        base = clone(self.estimator)
        self.pmv_results_ = [
            summarize(
                plan, evaluation, i, criterion=self.criterion, delta=self.delta,
                estimator=clone(base).set_params(**clone(params, safe=False)),
            )
            for i, params in enumerate(candidates)
        ]
        results: dict[str, Any] = {
            "mean_fit_time": evaluation.fit_time.mean(axis=1),
            "std_fit_time": evaluation.fit_time.std(axis=1),
            "mean_score_time": evaluation.score_time.mean(axis=1),
            "std_score_time": evaluation.score_time.std(axis=1),
            **_masked_param_columns(candidates),
            "params": candidates,
        }
        for j, rate in enumerate(plan.rates):
            results[f"mean_accuracy_r{rate:g}"] = np.array([r.mean_accuracy[j] for r in self.pmv_results_])
            results[f"std_accuracy_r{rate:g}"] = np.array([r.std_accuracy[j] for r in self.pmv_results_])
        results["slope"] = np.array([r.slope for r in self.pmv_results_])
        results["bound"] = np.array([r.bound for r in self.pmv_results_])
        score = np.array([r.score for r in self.pmv_results_])
        results["mean_test_score"] = score
        results["std_test_score"] = np.array([r.score_std for r in self.pmv_results_])
        ranked = np.where(
            np.isfinite(score), score, np.nanmin(score) - 1 if np.any(np.isfinite(score)) else 0
        )
        results["rank_test_score"] = rankdata(-ranked, method="min").astype(np.int32)
        return results

    def get_metadata_routing(self) -> MetadataRouter:
        """Route ``fit`` parameters to the estimator (there is no splitter or scorer to route to)."""
        return MetadataRouter(owner=self).add(
            estimator=self.estimator, method_mapping=MethodMapping().add(caller="fit", callee="fit")
        )
