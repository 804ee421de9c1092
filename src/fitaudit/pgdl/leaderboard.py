"""Rank complexity measures over PGDL tasks as the competition's leaderboard did.

:func:`leaderboard` scores measures on one or more tasks with
:func:`~fitaudit.pgdl.harness.score_task` and ranks them by the
competition's final score: ``100 x`` the mean over tasks of the official
conditional MI (a task the official scorer cannot score, e.g. an incomplete
grid, is left out of the mean, as there; a measure over the time budget on
any task scores 0). Kendall's tau, Psi and the general conditional MI are
averaged over tasks beside it. Tables and plots are drawn by
:mod:`fitaudit.report.pgdl`.

A measure built on a bounded search (the sharpness family) can end at the
search's bound on a model without resolving it; :func:`mark_saturation`
counts those models and says so in the score's note ("saturated on 18 of
18 models"), and the leaderboard's rows carry the count.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit.measures import Measure, list_measures, measure_class
from fitaudit.pgdl.harness import (
    COMPETITION_BUDGET_S,
    MeasureScore,
    TaskScores,
    as_measures,
    as_task,
    score_task,
)
from fitaudit.random import as_seed
from fitaudit.results import Result


@dataclasses.dataclass(repr=False)
class Leaderboard(Result):
    """Measures ranked over tasks (:func:`leaderboard`).

    Attributes
    ----------
    tasks : list of str
    rows : list of dict
        One per measure, best first: ``measure``, ``family``, ``final_score``
        (100 x mean official CMI; None if no task could be scored),
        ``official_cmi`` (per task), ``kendall``, ``psi``, ``general_cmi``
        (means over tasks), ``seconds_per_model`` (mean), ``over_budget``,
        ``n_models``, ``n_errors``, ``first_error`` (one error message, or
        ""), ``n_saturated`` (models at the search's bound) and ``note``.
    task_scores : list of TaskScores
        The full per-task results.
    """

    tasks: list[str]
    rows: list[dict[str, Any]]
    task_scores: list[TaskScores]

    def _summary_fields(self) -> list[str]:
        return ["tasks", "rows"]

    def row(self, measure: str) -> dict[str, Any]:
        """The row of ``measure``."""
        for row in self.rows:
            if row["measure"] == measure:
                return row
        raise InputError(f"`measure` must be one of {', '.join(r['measure'] for r in self.rows)}; got {measure!r}.")


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return float(np.mean(present)) if present else None


def saturated_models(score: MeasureScore, measure: Measure, n_examples: int) -> list[str]:
    """Ids of the models on which ``measure`` took its search's bound (:meth:`Measure.saturation_value`)."""
    bound = measure.saturation_value(n_examples)
    if bound is None:
        return []
    return [i for i, v in score.values.items() if v is not None and bool(np.isclose(v, bound, rtol=1e-9, atol=0.0))]


def mark_saturation(scores: TaskScores, measures: Sequence[Measure], n_examples: int) -> dict[str, int]:
    """Count the saturated models of every measure and say so in its score's note (in place).

    Returns measure name -> number of saturated models (measures that never
    saturate are left out).
    """
    counts: dict[str, int] = {}
    for measure in measures:
        score = scores.score(measure.name)
        hit = saturated_models(score, measure, n_examples)
        if hit:
            counts[measure.name] = len(hit)
            bound = measure.saturation_value(n_examples)
            text = (f"saturated on {len(hit)} of {scores.n_models} models (the search's bound, value {bound:.10g}): "
                    "those models are not told apart")
            score.note = f"{score.note}; {text}" if score.note else text
    return counts


def _first_error(entries: Sequence[MeasureScore]) -> str:
    for entry in entries:
        for message in entry.errors.values():
            return message
    return ""


def row_flags(row: Mapping[str, Any]) -> str:
    """What a table says beside a measure's row: over budget, failed (with the reason), saturated."""
    flags = []
    if row.get("over_budget"):
        flags.append("over budget")
    n_models, n_errors = row.get("n_models"), row.get("n_errors", 0)
    if n_errors and n_models and n_errors >= n_models and row.get("first_error"):
        flags.append(f"failed on all {n_models} models: {row['first_error']}")
    elif n_errors:
        flags.append(f"{n_errors} errors")
    if row.get("n_saturated"):
        flags.append(f"saturated on {row['n_saturated']} of {n_models} models")
    return ", ".join(flags)


def rank(task_scores: Sequence[TaskScores], saturated: Mapping[str, int] | None = None) -> Leaderboard:
    """A :class:`Leaderboard` from already scored tasks (the same measures on each).

    ``saturated``: measure name -> models at the search's bound over all
    tasks (:func:`mark_saturation`).
    """
    if not task_scores:
        raise InputError("`task_scores` must hold at least one TaskScores.")
    names = [s.measure for s in task_scores[0].scores]
    rows: list[dict[str, Any]] = []
    for name in names:
        entries = [ts.score(name) for ts in task_scores]
        over = any(e.over_budget for e in entries)
        official = [e.official_score for e in entries]
        final = 0.0 if over else _mean(official)
        try:
            family = measure_class(name).family
        except InputError:  # a Measure instance handed in that is not registered
            family = ""
        notes = [f"{os.path.basename(e.task.rstrip('/'))}: {e.note}" for e in entries if e.note]
        rows.append(
            {
                "measure": name,
                "family": family,
                "final_score": None if final is None else 100.0 * final,
                "official_cmi": [e.official_cmi for e in entries],
                "kendall": _mean([e.kendall for e in entries]),
                "psi": _mean([e.psi for e in entries]),
                "general_cmi": _mean([e.general_cmi for e in entries]),
                "seconds_per_model": float(np.mean([e.seconds_per_model for e in entries])),
                "over_budget": over,
                "n_models": sum(ts.n_models for ts in task_scores),
                "n_errors": sum(len(e.errors) for e in entries),
                "first_error": _first_error(entries),
                "n_saturated": (saturated or {}).get(name, 0),
                "note": "; ".join(notes),
            }
        )
    rows.sort(key=lambda r: (r["final_score"] is None, -(r["final_score"] or 0.0), -(r["kendall"] or -2.0)))
    return Leaderboard(tasks=[ts.task for ts in task_scores], rows=rows, task_scores=list(task_scores))


def leaderboard(
    tasks: Any,
    measures: Any = None,
    *,
    budget_s: float | None = COMPETITION_BUDGET_S,
    random_state: Any = 0,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    n_jobs: int | None = None,
    progress: bool = True,
) -> Leaderboard:
    """Score measures on every task and rank them by the competition's final score.

    Parameters
    ----------
    tasks : path, task, or a list of them
        PGDL task folders (or tasks from :func:`fitaudit.pgdl.load_task`).
    measures : list of str or Measure, optional
        Default: every registered measure (:func:`fitaudit.measures.list_measures`).
    budget_s, random_state, checkpoint_dir, n_jobs, progress
        As :func:`~fitaudit.pgdl.harness.score_task` (one checkpoint folder
        serves every task: units are keyed by the model files and data).

    Returns
    -------
    Leaderboard
    """
    items = [tasks] if isinstance(tasks, (str, os.PathLike)) or hasattr(tasks, "model_ids") else tasks
    if not isinstance(items, Sequence) or not items:
        raise InputError(f"`tasks` must be a task folder, a task, or a non-empty list of them; got {tasks!r}.")
    loaded = [as_task(t) for t in items]
    seed = as_seed(random_state)
    chosen = as_measures(list_measures() if measures is None else measures, seed)
    scored: list[TaskScores] = []
    saturated: dict[str, int] = {}
    for task in loaded:
        scores = score_task(
            task,
            chosen,
            budget_s=budget_s,
            random_state=seed,
            checkpoint_dir=checkpoint_dir,
            n_jobs=n_jobs,
            progress=progress,
        )
        for name, count in mark_saturation(scores, chosen, len(task.train_data()[1])).items():
            saturated[name] = saturated.get(name, 0) + count
        scored.append(scores)
    return rank(scored, saturated)
