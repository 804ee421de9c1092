"""Compare different learners by their PMV score on the same perturbed sets.

Model selection in Zhang et al. (2019) picks the candidate with the largest
|k_S| (docs/pmv.md#the-score). Every learner here is trained on the same
S_r (same seeds), so differences come from the learners, not the noise.
For a grid over one learner's hyper-parameters use
:class:`fitaudit.pmv.PMVSearchCV`; a grid over ``{"clf": [a, b, c]}`` of a
Pipeline works there too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit.pmv.baseline import at_majority_baseline
from fitaudit.pmv.cv_check import check_cv_check, cv_accuracies, cv_choice
from fitaudit.pmv.decision import comparison_verdict
from fitaudit.pmv.score import PMVResult, score_candidates
from fitaudit.results import Result
from fitaudit.verdict import Verdict


@dataclasses.dataclass(repr=False)
class PMVComparison(Result):
    """Outcome of :func:`compare_estimators`.

    Attributes
    ----------
    names : list of str
        Candidate names, in the order given.
    scores : ndarray
        The criterion of each candidate (|k_S| or the mutation score).
    best : str
        Name of the selected candidate: the largest score (first on ties)
        among the learners above the majority-class baseline
        (:func:`fitaudit.pmv.baseline.at_majority_baseline`), or among all
        when none is above it.
    results : dict of str to PMVResult
        Full result of each candidate.
    at_baseline : list of str
        The candidates that fit their clean labels no better than the
        majority-class learner (never selected over one that does).
    cv_accuracy : ndarray or None
        With ``cv_check=True``: each candidate's mean 5-fold cross-validated
        accuracy on the same data (:func:`fitaudit.pmv.cv_check.cv_accuracies`).
    cv_best : str or None
        With ``cv_check=True``: the candidate 5-fold cross-validation
        chooses (the largest ``cv_accuracy``, first on ties).
    """

    names: list[str]
    scores: np.ndarray
    best: str
    results: dict[str, PMVResult]
    at_baseline: list[str] = dataclasses.field(default_factory=list)
    cv_accuracy: np.ndarray | None = None
    cv_best: str | None = None

    def _summary_fields(self) -> list[str]:
        return ["names", "scores", "best"]

    def verdict(self, **context: Any) -> Verdict:
        """PMV's selection, a measurement (:func:`fitaudit.pmv.decision.comparison_verdict`)."""
        return comparison_verdict(self, **context)

    def contradiction(self) -> str | None:
        """Where the cross-validation check disagrees with itself: one accuracy per candidate, ``cv_best`` the
        first of the largest."""
        if self.cv_accuracy is None and self.cv_best is None:
            return None
        if self.cv_accuracy is None or self.cv_best is None or len(self.cv_accuracy) != len(self.names):
            return (f"`cv_accuracy` must hold one accuracy per candidate ({len(self.names)}) with `cv_best` beside "
                    "it; got one without the other or another length")
        chosen = self.names[cv_choice(self.cv_accuracy)]
        return None if chosen == self.cv_best else (f"`cv_best` is {self.cv_best!r}, but the largest "
                                                    f"`cv_accuracy` is {chosen!r}'s")


def _named(estimators: Any) -> list[tuple[str, Any]]:
    if isinstance(estimators, Mapping):
        pairs = [(str(k), v) for k, v in estimators.items()]
    elif isinstance(estimators, Sequence) and not isinstance(estimators, str):
        pairs = []
        seen: dict[str, int] = {}
        for item in estimators:
            if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
                pairs.append(item)
                continue
            base = type(item).__name__
            seen[base] = seen.get(base, 0) + 1
            pairs.append((base if seen[base] == 1 else f"{base}_{seen[base]}", item))
    else:
        raise InputError(
            f"`estimators` must be a dict of name -> estimator or a list; got {type(estimators).__name__}."
        )
    if not pairs:
        raise InputError("`estimators` must hold at least one estimator; got none.")
    names = [n for n, _ in pairs]
    if len(set(names)) != len(names):
        raise InputError(f"`estimators` names must be unique; got {names}.")
    return pairs


def compare_estimators(
    estimators: Any,
    X: Any,
    y: Any,
    *,
    rates: Any = None,
    n_repeats: int = 1,
    scheme: str = "next",
    criterion: str = "pmv",
    delta: float = 0.05,
    random_state: Any = 0,
    n_jobs: int | None = None,
    progress: bool = False,
    checkpoint_dir: Any = None,
    cv_check: bool = False,
) -> PMVComparison:
    """PMV scores of several learners on identical perturbed training sets.

    Parameters
    ----------
    estimators : dict of name -> classifier, or list of classifiers / (name, classifier)
        The candidates (unnamed ones are named after their class).
    X, y, rates, n_repeats, scheme, criterion, delta, random_state, n_jobs, progress, checkpoint_dir
        As in :func:`fitaudit.pmv.pmv_score`; all fits of all candidates
        share one parallel pool.
    cv_check : bool, default False
        Also score every candidate by 5-fold cross-validation on the same
        data (:mod:`fitaudit.pmv.cv_check`; 5 more fits per candidate) and
        record cross-validation's choice beside PMV's.

    Returns
    -------
    PMVComparison
        Scores, the selected name (largest score) and each full result.
    """
    pairs = _named(estimators)
    scored = score_candidates(
        [e for _, e in pairs], X, y, rates=rates, n_repeats=n_repeats, scheme=scheme,
        criterion=criterion, delta=delta, fit_params=None, random_state=random_state,
        n_jobs=n_jobs, progress=progress, checkpoint_dir=checkpoint_dir,
    )
    results = {name: result for (name, _), result in zip(pairs, scored)}
    scores = np.array([results[n].score for n, _ in pairs])
    names = [n for n, _ in pairs]
    baseline = [name for name in names if at_majority_baseline(results[name])]
    # a learner at the majority-class baseline is never selected over one that learns (its |k_S| is
    # what counting the classes gives); the first of the largest score otherwise
    ranked = sorted(range(len(names)), key=lambda i: (names[i] in baseline, -scores[i], i))
    cv_accuracy = cv_best = None
    if check_cv_check(cv_check):
        cv_accuracy = cv_accuracies([e for _, e in pairs], X, y, random_state=random_state, n_jobs=n_jobs)
        cv_best = names[cv_choice(cv_accuracy)]
    return PMVComparison(names=names, scores=scores, best=names[ranked[0]], results=results,
                         at_baseline=baseline, cv_accuracy=cv_accuracy, cv_best=cv_best)
