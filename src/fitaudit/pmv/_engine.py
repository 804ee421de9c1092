"""Shared machinery of :func:`pmv_score`, :func:`compare_estimators` and :class:`PMVSearchCV`.

A *plan* fixes the perturbed training sets once: slot 0 is the original
sample S (r = 0), then one slot per (repeat, rate) with labels from
:func:`fitaudit.pmv.perturb.flip_labels` and a seed from
:func:`fitaudit.random.spawn_seeds`. Every candidate learner is trained on
every slot, so candidates are compared on identical noisy sets, and the
numbers do not depend on ``n_jobs``. All fits go through
:func:`fitaudit.parallel.parallel_map` (joblib; Dask through
``joblib.parallel_config(backend="dask")``).
"""

from __future__ import annotations

import dataclasses
import functools
import numbers
import time
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import sparse
from sklearn.base import clone, is_classifier
from sklearn.exceptions import FitFailedWarning
from sklearn.pipeline import Pipeline
from sklearn.utils import get_tags
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import column_or_1d

from fitaudit._errors import InputError
from fitaudit._validation import as_array, check_choice, check_int
from fitaudit.parallel import parallel_map
from fitaudit.pmv.perturb import (
    DEFAULT_RATES,
    SCHEMES,
    check_class_sizes,
    check_no_missing_labels,
    check_rates,
    flip_labels,
    plain_label,
)
from fitaudit.random import spawn_seeds

#: model-selection criteria: the PMV slope, or the later single-rate mutation score
CRITERIA = ("pmv", "mutation")

#: the mutation-validation paper's noise rate eta
DEFAULT_ETA = 0.2


@dataclasses.dataclass(frozen=True)
class Plan:
    """The perturbed training sets shared by every candidate.

    Attributes
    ----------
    rates : ndarray
        0 followed by the noise rates, sorted.
    n_repeats : int
        Perturbations drawn per rate.
    labels : list of ndarray
        Slot 0: the original labels; slot ``1 + i * k + j``: repeat i, rate j.
    seeds : list of int
        Seed of each perturbed slot (in slot order).
    scheme : str
        Multi-class relabelling scheme.
    estimator_seed : int
        Given to every ``random_state`` parameter of a learner that is None,
        so that the same ``random_state`` gives the same numbers.
    """

    rates: np.ndarray
    n_repeats: int
    labels: list[np.ndarray]
    seeds: list[int]
    scheme: str
    estimator_seed: int

    @property
    def n_slots(self) -> int:
        return len(self.labels)

    def matrix(self, per_slot: np.ndarray) -> np.ndarray:
        """Arrange per-slot values as (n_repeats, n_rates + 1); r = 0 is shared."""
        noisy = per_slot[1:].reshape(self.n_repeats, self.rates.size - 1)
        zero = np.full((self.n_repeats, 1), per_slot[0])
        return np.hstack([zero, noisy])


def resolve_rates(rates: Any, criterion: str) -> np.ndarray:
    """Default rates per criterion; the mutation score takes exactly one rate (eta)."""
    criterion = check_choice(criterion, "criterion", CRITERIA)
    if rates is None:
        rates = DEFAULT_RATES if criterion == "pmv" else (DEFAULT_ETA,)
    checked = check_rates(rates)
    if criterion == "mutation" and checked.size != 1:
        raise InputError(
            f"`rates` must hold exactly one rate (eta) for criterion='mutation'; got {checked.size}."
        )
    return checked


#: scikit-learn steps whose output holds no missing value whatever their input (imputers; a one-hot encoder
#: makes NaN a category of its own)
_FILLS_NAN = ("SimpleImputer", "KNNImputer", "IterativeImputer", "MissingIndicator", "OneHotEncoder")


def _nan_flow(estimator: Any) -> tuple[bool, bool]:
    """(accepts missing values, its output holds none) for a scikit-learn step, a Pipeline or a ColumnTransformer.

    A pipeline accepts NaN when each step up to the first that removes them accepts them (a scaler passes
    them on to the next step); a ColumnTransformer when every branch does, and it removes them when every
    branch removes them or is dropped.
    """
    if estimator is None or estimator == "drop":
        return True, True
    if estimator == "passthrough":
        return True, False
    if isinstance(estimator, Pipeline):
        for _, step in estimator.steps:
            accepts, removes = _nan_flow(step)
            if not accepts:
                return False, False
            if removes:
                return True, True
        return True, False
    branches = getattr(estimator, "transformers", None)
    if type(estimator).__name__ == "ColumnTransformer" and isinstance(branches, list):
        flows = [_nan_flow(branch[1]) for branch in branches]
        flows.append(_nan_flow(getattr(estimator, "remainder", "drop")))
        return all(a for a, _ in flows), all(r for _, r in flows)
    if type(estimator).__name__ in _FILLS_NAN:
        return True, True
    try:
        return bool(get_tags(estimator).input_tags.allow_nan), False
    except (AttributeError, TypeError, ValueError):
        return False, False


def _accepts_nan(estimator: Any) -> bool:
    """Whether ``estimator`` as a whole takes missing values (:func:`_nan_flow`)."""
    return _nan_flow(estimator)[0]


def _n_rows(X: Any) -> int:
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    try:
        return len(X)
    except TypeError:
        array = np.asarray(X)
        if array.ndim == 0:
            raise InputError(
                f"`X` must be array-like with one row per example; got {type(X).__name__}."
            ) from None
        return int(array.shape[0])


def _numeric_values(X: Any) -> np.ndarray | None:
    """The numbers of ``X`` (the stored ones when sparse), or None when it is not numeric."""
    if sparse.issparse(X):
        return np.asarray(X.tocoo().data, dtype=np.float64)
    try:
        return np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        return None


def check_problem(estimator: Any, X: Any, y: Any) -> tuple[Any, np.ndarray]:
    """Validate a learner and a classification sample; return ``X`` untouched and ``y`` as an array.

    ``X`` is passed to the learner as given (DataFrames, text for pipelines);
    when it is numeric it must be finite unless the learner accepts missing
    values (scikit-learn's ``allow_nan`` tag).
    """
    if not hasattr(estimator, "fit") or not hasattr(estimator, "get_params"):
        raise InputError(
            f"`estimator` must be a scikit-learn style estimator with fit/get_params; "
            f"got {type(estimator).__name__}."
        )
    if not is_classifier(estimator):
        raise InputError(
            f"`estimator` must be a classifier (PMV flips class labels); got "
            f"{type(estimator).__name__}, which scikit-learn does not tag as a classifier."
        )
    labels = as_array(y, "y")
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = column_or_1d(labels, warn=True)
    if labels.ndim != 1:
        raise InputError(f"`y` must be a 1-d array of class labels; got shape {labels.shape}.")
    check_no_missing_labels(labels)
    n_x = _n_rows(X)
    if n_x != labels.shape[0]:
        raise InputError(
            f"`X` and `y` must have the same number of examples; got {n_x} and {labels.shape[0]}."
        )
    kind = type_of_target(labels) if labels.size else "empty"
    if kind not in ("binary", "multiclass"):
        what = "Unknown label type" if kind == "unknown" else f"scikit-learn reads it as {kind!r}"
        raise InputError(
            f"`y` must hold class labels (binary or multi-class); {what}. "
            f"PMV is for classifiers, not regression targets."
        )
    if np.unique(labels).size < 2:
        raise InputError(
            f"`y` must hold at least two classes; got only one class ({plain_label(labels[0])!r})."
        )
    if not _accepts_nan(estimator):
        values = _numeric_values(X)
        if values is not None and not np.all(np.isfinite(values)):
            bad = int(values.size - np.count_nonzero(np.isfinite(values)))
            raise InputError(
                f"`X` holds {bad} NaN or infinite value(s) and {type(estimator).__name__} does not "
                f"accept missing values; impute them first (e.g. a Pipeline starting with SimpleImputer)."
            )
    return X, labels


#: most perturbations per rate: every one is a fit per rate (1000 x 10 rates = 10,000 fits) and a
#: perturbed copy of the labels held in memory; the mean over repeats is settled long before
#: (Zhang et al. use a handful of repeats)
MAX_REPEATS = 1000


def make_plan(
    y: np.ndarray, rates: np.ndarray, *, n_repeats: int, scheme: str, random_state: Any
) -> Plan:
    """Draw the perturbed label sets (see :class:`Plan`); at most :data:`MAX_REPEATS` per rate."""
    n_repeats = check_int(n_repeats, "n_repeats", minimum=1, maximum=MAX_REPEATS)
    scheme = check_choice(scheme, "scheme", SCHEMES)
    classes, sizes = np.unique(y, return_counts=True)
    check_class_sizes(classes, sizes, list(rates))
    *seeds, estimator_seed = spawn_seeds(random_state, n_repeats * rates.size + 1)
    labels = [y]
    for i in range(n_repeats):
        for j, rate in enumerate(rates):
            labels.append(
                flip_labels(y, float(rate), scheme=scheme, random_state=seeds[i * rates.size + j])
            )
    return Plan(np.concatenate([[0.0], rates]), n_repeats, labels, seeds, scheme, estimator_seed)


def seed_unseeded(estimator: Any, seed: int) -> Any:
    """A clone of ``estimator`` whose ``random_state`` parameters left at None are set to ``seed``.

    Nested ones too (a Pipeline's steps, a meta-estimator's base estimator);
    seeds the user chose are kept. Without this an unseeded learner (an
    MLP, a forest) gives other numbers on every run.
    """
    fresh = clone(estimator)
    unseeded = {
        name: seed
        for name, value in fresh.get_params(deep=True).items()
        if (name == "random_state" or name.endswith("__random_state")) and value is None
    }
    return fresh.set_params(**unseeded) if unseeded else fresh


def check_error_score(error_score: Any) -> float | str:
    """``"raise"`` or a number (NaN allowed), as in scikit-learn's searches."""
    if isinstance(error_score, str) and error_score == "raise":
        return error_score
    if isinstance(error_score, numbers.Real) and not isinstance(error_score, bool):
        return float(error_score)
    raise InputError(f"`error_score` must be 'raise' or a number; got {error_score!r}.")


def _fit_slot(
    task: Mapping[str, int],
    *,
    estimators: Sequence[Any],
    X: Any,
    plan_labels: Sequence[np.ndarray],
    fit_params: Mapping[str, Any],
    error_score: Any,
) -> dict[str, Any]:
    """Train one candidate on one slot; accuracy on its own (possibly noisy) labels and on S."""
    estimator = clone(estimators[task["candidate"]])
    y_slot = plan_labels[task["slot"]]
    start = time.perf_counter()
    try:
        estimator.fit(X, y_slot, **fit_params)
        fitted = time.perf_counter()
        predicted = np.asarray(estimator.predict(X))
    except Exception as exc:
        if isinstance(error_score, str) and error_score == "raise":
            cell = _cell_error(exc, X, estimator)
            if cell is not None:
                raise cell from exc
            raise
        return {
            "accuracy": float(error_score),
            "accuracy_original": float(error_score),
            "fit_time": time.perf_counter() - start,
            "score_time": 0.0,
            "error": f"{type(exc).__name__}: {exc}",
        }
    done = time.perf_counter()
    return {
        "accuracy": float(np.mean(predicted == y_slot)),
        "accuracy_original": float(np.mean(predicted == plan_labels[0])),
        "fit_time": fitted - start,
        "score_time": done - fitted,
    }


def _cell_error(exc: Exception, X: Any, estimator: Any) -> InputError | None:
    """The error naming the cell of a table ``X`` the learner could not read as a number (None: not a table, or
    another failure; :func:`fitaudit.data.table_cells.failed_cell_error`)."""
    from fitaudit.data.table_cells import failed_cell_error
    from fitaudit.data.tables import as_frame, is_frame
    from fitaudit.models.base import describe_exception

    if not is_frame(X) or isinstance(exc, InputError):
        return None
    return failed_cell_error(exc, as_frame(X, "X"), "X", f"the learner {type(estimator).__name__}",
                             cause=describe_exception(exc))


@dataclasses.dataclass
class Evaluation:
    """Per-candidate, per-slot outputs, each of shape (n_candidates, n_slots)."""

    accuracy: np.ndarray
    accuracy_original: np.ndarray
    fit_time: np.ndarray
    score_time: np.ndarray


def evaluate(
    estimators: Sequence[Any],
    X: Any,
    plan: Plan,
    *,
    fit_params: Mapping[str, Any] | None = None,
    error_score: Any = np.nan,
    n_jobs: int | None = None,
    progress: bool = False,
    checkpoint_dir: Any = None,
) -> Evaluation:
    """Train every candidate on every slot of ``plan`` (in parallel) and collect accuracies."""
    error_score = check_error_score(error_score)
    if fit_params is not None and not isinstance(fit_params, Mapping):
        raise InputError(
            f"`fit_params` must be a dict of keyword arguments of fit; got {type(fit_params).__name__}."
        )
    tasks = [{"candidate": c, "slot": s} for c in range(len(estimators)) for s in range(plan.n_slots)]
    # parallel_map keys each finished fit by the worker (learners, data, labels, settings) and the task
    worker = functools.partial(
        _fit_slot,
        estimators=[seed_unseeded(e, plan.estimator_seed) for e in estimators],
        X=X,
        plan_labels=plan.labels,
        fit_params=dict(fit_params or {}),
        error_score=error_score,
    )
    outputs = parallel_map(
        worker,
        tasks,
        n_jobs=n_jobs,
        progress=progress,
        desc="PMV fits",
        checkpoint_dir=checkpoint_dir,
    )
    failures = [o["error"] for o in outputs if "error" in o]
    if failures:
        warnings.warn(
            f"{len(failures)} of {len(outputs)} PMV fits failed and were scored {error_score}; "
            f"first error: {failures[0]}",
            FitFailedWarning,
            stacklevel=3,
        )
    shape = (len(estimators), plan.n_slots)

    def column(name: str) -> np.ndarray:
        return np.array(
            [o[name] if o[name] is not None else np.nan for o in outputs], dtype=np.float64
        ).reshape(shape)

    return Evaluation(
        column("accuracy"), column("accuracy_original"), column("fit_time"), column("score_time")
    )


def fit_line(rates: np.ndarray, accuracies: np.ndarray) -> tuple[float, float]:
    """(k_S, b): the least-squares line acc = k_S r + b (``numpy.polyfit``, degree 1).

    Zhang et al. (2019), Sec. 3 (docs/pmv.md#the-score). NaN for both
    when an accuracy is not finite (a failed fit scored NaN).
    """
    accuracies = np.asarray(accuracies, dtype=np.float64)
    if not np.all(np.isfinite(accuracies)):
        return float("nan"), float("nan")
    slope, intercept = np.polyfit(np.asarray(rates, dtype=np.float64), accuracies, 1)
    return float(slope), float(intercept)


def pmv_bound(score: float, m: int, delta: float) -> float:
    """SRM-style risk bound of PMV: ``1 - 0.5 |k_S| + 3 sqrt(ln(2/delta) / (2m))``, ``m`` the training sample's size."""
    return float(1.0 - 0.5 * abs(score) + 3.0 * np.sqrt(np.log(2.0 / delta) / (2.0 * m)))


def mutation_value(eta: float, acc_s_f: float, acc_s_f_eta: float, acc_s_eta_f_eta: float) -> float:
    """Mutation-validation score ``(1 - 2 eta) A_S(f_eta) + A_S(f) - A_{S_eta}(f_eta) + eta``."""
    return (1.0 - 2.0 * eta) * acc_s_f_eta + acc_s_f - acc_s_eta_f_eta + eta


def criterion_per_repeat(
    criterion: str, plan: Plan, accuracy: np.ndarray, accuracy_original: np.ndarray
) -> np.ndarray:
    """The criterion for each repeat, from one candidate's (n_repeats, n_rates + 1) matrices.

    ``"pmv"``: |k_S| of each repeat's (r, accuracy) line, the unperturbed fit
    shared; ``"mutation"``: the mutation score at eta = the single rate.
    """
    if criterion == "pmv":
        return np.array([abs(fit_line(plan.rates, row)[0]) for row in accuracy])
    eta = float(plan.rates[1])
    return np.array(
        [
            mutation_value(eta, accuracy[i, 0], accuracy_original[i, 1], accuracy[i, 1])
            for i in range(plan.n_repeats)
        ]
    )
