"""Rank complexity measures over PGDL tasks as the competition's leaderboard did.

:func:`leaderboard` scores measures on one or more tasks with
:func:`~fitaudit.pgdl.harness.score_task` and ranks them by the
competition's final score: ``100 x`` the mean over tasks of the official
conditional MI (a task the official scorer cannot score, e.g. an incomplete
grid, is left out of the mean, as there; a measure over the time budget on
any task scores 0). Kendall's tau, Psi and the general conditional MI are
averaged over tasks beside it. Tables and plots are drawn by
:mod:`fitaudit.report.pgdl`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit.measures import get_measure, list_measures
from fitaudit.pgdl.harness import COMPETITION_BUDGET_S, TaskScores, as_task, score_task
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
        ``n_errors`` and ``note``.
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


def rank(task_scores: Sequence[TaskScores]) -> Leaderboard:
    """A :class:`Leaderboard` from already scored tasks (the same measures on each)."""
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
            family = type(get_measure(name)).family
        except InputError:
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
                "n_errors": sum(len(e.errors) for e in entries),
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
    chosen = list_measures() if measures is None else measures
    scored = [
        score_task(
            task,
            chosen,
            budget_s=budget_s,
            random_state=random_state,
            checkpoint_dir=checkpoint_dir,
            n_jobs=n_jobs,
            progress=progress,
        )
        for task in loaded
    ]
    return rank(scored)
