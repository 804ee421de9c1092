"""The PMV score of one learner on one sample.

Zhang, Barr, Guedj, Harman, Shawe-Taylor (2019), "Perturbed Model
Validation", Sec. 3; docs/pmv.md#the-method-in-detail): retrain the learner on copies S_r of
the training sample with a fraction r of each class's labels flipped, record
its training accuracy on the labels it was trained on, fit a least-squares
line acc = k_S r + b (``numpy.polyfit``, degree 1) and report |k_S|. A
learner that memorises the noise keeps acc ~ 1 (|k_S| ~ 0, overfitting); one
that cannot fit the signal has low accuracy everywhere (small |k_S|,
underfitting); a good fit loses accuracy as fast as labels are flipped.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import check_float
from fitaudit.pmv._engine import (
    Evaluation,
    Plan,
    check_problem,
    criterion_per_repeat,
    evaluate,
    fit_line,
    make_plan,
    pmv_bound,
    resolve_rates,
)
from fitaudit.pmv.decision import GOOD_FIT_SLOPE, pmv_contradiction, pmv_verdict
from fitaudit.pmv.heldout import HeldOutCheck, heldout_check
from fitaudit.results import Result
from fitaudit.verdict import Verdict


@dataclasses.dataclass(repr=False)
class PMVResult(Result):
    """Outcome of :func:`pmv_score`.

    PMV is a score, not a test: there is no p-value. ``statistic`` is |k_S|,
    the criterion the paper ranks learners by; ``bound`` is its risk bound.

    Attributes
    ----------
    statistic : float
        |k_S|, the absolute least-squares slope of mean training accuracy
        against the noise rate (with one repeat and ``criterion="pmv"`` the
        same number as ``score``).
    criterion : str
        ``"pmv"`` (|k_S|) or ``"mutation"`` (the single-rate mutation score).
    score : float
        The criterion, averaged over repeats: |k_S| for ``"pmv"`` (larger =
        better fit), m for ``"mutation"``.
    score_std : float
        Spread (standard deviation) of the criterion over repeats.
    slope : float
        k_S, the least-squares slope of mean training accuracy against r.
    intercept : float
        Intercept of that line.
    bound : float
        SRM-style risk bound ``1 - 0.5 |k_S| + 3 sqrt(ln(2/delta) / (2m))``.
    delta : float
        Confidence parameter of the bound.
    rates : ndarray
        0 followed by the noise rates.
    mean_accuracy, std_accuracy : ndarray
        Training accuracy on the (perturbed) training labels at each rate,
        mean and standard deviation over repeats.
    accuracies : ndarray of shape (n_repeats, n_rates + 1)
        Every training accuracy (the r = 0 fit is shared by all repeats).
    accuracies_original : ndarray of shape (n_repeats, n_rates + 1)
        Accuracy of the same fits on the original labels.
    n_train : int
        m, the size of the training sample.
    n_repeats : int
        Perturbations drawn per rate.
    scheme : str
        Multi-class relabelling scheme (see :mod:`fitaudit.pmv.perturb`).
    estimator : str
        ``repr`` of the learner.
    fit_seconds : float
        Total seconds spent in ``fit``.
    baseline_accuracy : ndarray
        Training accuracy, at each rate, of the majority-class learner
        (scikit-learn's ``DummyClassifier(strategy="most_frequent")``) on the
        same perturbed sets: the share of the most frequent label in S_r
        (mean over repeats), computed exactly without fitting.
    baseline_statistic : float
        That learner's |k_S|. PMV's slope rewards it: it ignores every label
        but the count of the largest class, so with a majority share p it
        loses accuracy as labels are flipped (|k_S| = 2p - 1 with two
        classes) although it has learnt nothing. A learner is judged against
        it (see :func:`fitaudit.pmv.decision.pmv_verdict`).
    heldout : HeldOutCheck or None
        Where the learner memorises its labels (PMV cannot tell whether it
        generalises): its 5-fold cross-validated accuracy beside the majority
        class and a scaled logistic regression
        (:func:`fitaudit.pmv.heldout.heldout_check`); None otherwise.
    """

    ALIGNED = (("rates", "mean_accuracy", "std_accuracy", "baseline_accuracy"),)  # one value per noise rate

    statistic: float
    criterion: str
    score: float
    score_std: float
    slope: float
    intercept: float
    bound: float
    delta: float
    rates: np.ndarray
    mean_accuracy: np.ndarray
    std_accuracy: np.ndarray
    accuracies: np.ndarray
    accuracies_original: np.ndarray
    n_train: int
    n_repeats: int
    scheme: str
    estimator: str
    fit_seconds: float
    baseline_accuracy: np.ndarray
    baseline_statistic: float
    heldout: HeldOutCheck | None = None

    def _summary_fields(self) -> list[str]:
        return [
            "statistic",
            "criterion",
            "score",
            "score_std",
            "slope",
            "bound",
            "mean_accuracy",
            "baseline_statistic",
            "n_train",
            "estimator",
        ]

    def verdict(self, **context: Any) -> Verdict:
        """The decision on |k_S| with ``threshold`` (:func:`fitaudit.pmv.decision.pmv_verdict`)."""
        return pmv_verdict(self, **context)

    def contradiction(self) -> str | None:
        """Where a saved copy disagrees with its curve (:func:`fitaudit.pmv.decision.pmv_contradiction`)."""
        return pmv_contradiction(self)


def majority_accuracy(plan: Plan) -> np.ndarray:
    """Training accuracy of the majority-class learner on every set of ``plan``, as (n_repeats, n_rates + 1).

    Fitted on S_r it predicts the most frequent label of S_r, so its training
    accuracy is that label's share: exact, no fit needed.
    """
    shares = np.array([np.unique(labels, return_counts=True)[1].max() / labels.size for labels in plan.labels])
    return plan.matrix(shares)


def summarize(
    plan: Plan, evaluation: Evaluation, index: int, *, criterion: str, delta: float, estimator: Any
) -> PMVResult:
    """Turn candidate ``index`` of an evaluation into a :class:`PMVResult`.

    The one path from fits to a result: :func:`pmv_score`,
    :func:`~fitaudit.pmv.compare_estimators` and
    :class:`~fitaudit.pmv.PMVSearchCV` (its ``cv_results_``) all use it.
    """
    accuracy = plan.matrix(evaluation.accuracy[index])
    original = plan.matrix(evaluation.accuracy_original[index])
    per_repeat = criterion_per_repeat(criterion, plan, accuracy, original)
    mean = accuracy.mean(axis=0)
    slope, intercept = fit_line(plan.rates, mean)
    baseline = majority_accuracy(plan).mean(axis=0)
    m = int(len(plan.labels[0]))
    return PMVResult(
        statistic=abs(slope),
        criterion=criterion,
        score=float(np.mean(per_repeat)),
        score_std=float(np.std(per_repeat)),
        slope=slope,
        intercept=intercept,
        bound=pmv_bound(slope, m, delta) if np.isfinite(slope) else float("nan"),
        delta=delta,
        rates=plan.rates,
        mean_accuracy=mean,
        std_accuracy=accuracy.std(axis=0),
        accuracies=accuracy,
        accuracies_original=original,
        n_train=m,
        n_repeats=plan.n_repeats,
        scheme=plan.scheme,
        estimator=repr(estimator),
        fit_seconds=float(np.sum(evaluation.fit_time[index])),
        baseline_accuracy=baseline,
        baseline_statistic=abs(fit_line(plan.rates, baseline)[0]),
    )


def pmv_score(
    estimator: Any,
    X: Any,
    y: Any,
    *,
    rates: Any = None,
    n_repeats: int = 1,
    scheme: str = "next",
    criterion: str = "pmv",
    delta: float = 0.05,
    fit_params: dict[str, Any] | None = None,
    random_state: Any = 0,
    n_jobs: int | None = None,
    progress: bool = False,
    checkpoint_dir: Any = None,
    heldout: bool | None = None,
) -> PMVResult:
    """Perturbed model validation score of a scikit-learn classifier.

    Retrains ``estimator`` on S (r = 0) and on label-flipped copies S_r, then
    fits acc = k_S r + b by least squares; the score is |k_S| (Zhang et al.
    2019, Sec. 3; docs/pmv.md#the-score). Costs ``1 + n_rates * n_repeats`` fits.

    Parameters
    ----------
    estimator : scikit-learn classifier (or Pipeline ending in one)
        Cloned for every fit; it is not modified.
    X : array-like of shape (n_samples, ...)
        Training inputs, passed to ``fit`` as given.
    y : array-like of shape (n_samples,)
        Class labels (at least two classes).
    rates : sequence of float in (0, 0.5], optional
        Noise rates r_1..r_k; default 0.05, 0.10, ..., 0.50 (the paper's),
        or ``[0.2]`` for ``criterion="mutation"``.
    n_repeats : int
        Independent perturbations per rate; the r = 0 fit is shared.
    scheme : {"next", "random"}
        Where flipped labels go with more than two classes
        (:func:`fitaudit.pmv.perturb.flip_labels`).
    criterion : {"pmv", "mutation"}
        ``"pmv"``: |k_S|. ``"mutation"``: the later single-rate mutation
        validation score ``m = (1 - 2 eta) A_S(f_eta) + A_S(f) - A_{S_eta}(f_eta)
        + eta`` with eta the single rate (default 0.2).
    delta : float in (0, 1)
        Confidence of the SRM-style bound ``bound``.
    fit_params : dict, optional
        Extra keyword arguments of ``estimator.fit``.
    random_state : None, int, SeedSequence or Generator, default 0
        Seeds the label perturbations and every ``random_state`` parameter
        of the learner left at None (seeds it sets itself are kept): the
        same seed gives the same numbers, whatever ``n_jobs``.
    n_jobs : int, optional
        Parallel fits (joblib; works inside ``joblib.parallel_config(backend="dask")``).
    progress : bool
        Show a progress bar.
    checkpoint_dir : path, optional
        Keep finished fits there so an interrupted run resumes.
    heldout : bool or None
        Also cross-validate the learner beside the baseline learners
        (:func:`fitaudit.pmv.heldout.heldout_check`, ``3 * 5 * 3`` more fits, the majority class's trivial).
        None (default): only where PMV cannot tell, when |k_S| is below
        :data:`fitaudit.pmv.decision.GOOD_FIT_SLOPE` with the ``"pmv"``
        criterion (a learner that memorises its labels).

    Returns
    -------
    PMVResult

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> X, y = make_moons(200, noise=0.3, random_state=0)
    >>> result = pmv_score(DecisionTreeClassifier(max_depth=3, random_state=0), X, y, random_state=0)
    >>> 0 <= result.score <= 2
    True
    """
    if heldout not in (None, True, False):
        raise InputError(f"`heldout` must be None, True or False; got {heldout!r}.")
    result = score_candidates(
        [estimator], X, y, rates=rates, n_repeats=n_repeats, scheme=scheme, criterion=criterion,
        delta=delta, fit_params=fit_params, random_state=random_state, n_jobs=n_jobs,
        progress=progress, checkpoint_dir=checkpoint_dir,
    )[0]
    memorises = criterion == "pmv" and not float(result.statistic) >= GOOD_FIT_SLOPE
    if heldout or (heldout is None and memorises):
        result.heldout = heldout_check(estimator, X, y, random_state=random_state, n_jobs=n_jobs,
                                       fit_params=fit_params)
    return result


def score_candidates(
    estimators: list[Any],
    X: Any,
    y: Any,
    *,
    rates: Any,
    n_repeats: int,
    scheme: str,
    criterion: str,
    delta: float,
    fit_params: dict[str, Any] | None,
    random_state: Any,
    n_jobs: int | None,
    progress: bool,
    checkpoint_dir: Any,
) -> list[PMVResult]:
    """PMV results of several learners trained on the same perturbed sets S_r.

    The shared core of :func:`pmv_score` and
    :func:`fitaudit.pmv.compare_estimators` (arguments as in :func:`pmv_score`):
    validate, draw the perturbation plan once, fit every learner on every
    S_r in one parallel pool, and summarise each learner.
    """
    for estimator in estimators:
        X, labels = check_problem(estimator, X, y)
    checked_rates = resolve_rates(rates, criterion)
    delta = check_float(
        delta, "delta", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False
    )
    plan = make_plan(
        labels, checked_rates, n_repeats=n_repeats, scheme=scheme, random_state=random_state
    )
    evaluation = evaluate(
        estimators,
        X,
        plan,
        fit_params=fit_params,
        error_score="raise",
        n_jobs=n_jobs,
        progress=progress,
        checkpoint_dir=checkpoint_dir,
    )
    return [
        summarize(plan, evaluation, i, criterion=criterion, delta=delta, estimator=estimator)
        for i, estimator in enumerate(estimators)
    ]


__all__ = ["PMVResult", "majority_accuracy", "pmv_score", "summarize"]
