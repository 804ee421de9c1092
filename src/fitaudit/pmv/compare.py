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
    """

    names: list[str]
    scores: np.ndarray
    best: str
    results: dict[str, PMVResult]
    at_baseline: list[str] = dataclasses.field(default_factory=list)

    def _summary_fields(self) -> list[str]:
        return ["names", "scores", "best"]

    def verdict(self, **context: Any) -> Verdict:
        """PMV's selection, a measurement (:func:`fitaudit.pmv.decision.comparison_verdict`)."""
        return comparison_verdict(self, **context)


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
) -> PMVComparison:
    """PMV scores of several learners on identical perturbed training sets.

    Parameters
    ----------
    estimators : dict of name -> classifier, or list of classifiers / (name, classifier)
        The candidates (unnamed ones are named after their class).
    X, y, rates, n_repeats, scheme, criterion, delta, random_state, n_jobs, progress, checkpoint_dir
        As in :func:`fitaudit.pmv.pmv_score`; all fits of all candidates
        share one parallel pool.

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
    return PMVComparison(names=names, scores=scores, best=names[ranked[0]], results=results,
                         at_baseline=baseline)
