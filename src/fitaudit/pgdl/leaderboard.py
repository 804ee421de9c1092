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
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit.measures import Measure, list_measures, measure_class
from fitaudit.options import RunOptions, as_options
from fitaudit.pgdl.decision import leaderboard_verdict
from fitaudit.pgdl.harness import (
    COMPETITION_BUDGET_S,
    MeasureScore,
    TaskScores,
    as_measures,
    as_task,
    score_task,
)
from fitaudit.pgdl.population_like import PopulationLike, check_formats
from fitaudit.random import as_seed
from fitaudit.results import Result
from fitaudit.verdict import Verdict


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

    def verdict(self, **context: Any) -> Verdict:
        """The measure ranked first, a measurement (:func:`fitaudit.pgdl.decision.leaderboard_verdict`)."""
        return leaderboard_verdict(self, **context)


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
    checkpoint_dir: str | os.PathLike[str] | None = None,
    options: RunOptions | None = None,
) -> Leaderboard:
    """Score measures on every task and rank them by the competition's final score.

    Parameters
    ----------
    tasks : path, task, or a list of them
        PGDL task folders (or tasks from :func:`fitaudit.pgdl.load_task`).
    measures : list of str or Measure, optional
        Default: every registered measure (:func:`fitaudit.measures.list_measures`).
    budget_s, checkpoint_dir, options
        As :func:`~fitaudit.pgdl.harness.score_task` (one checkpoint folder
        serves every task: units are keyed by the model files and data).

    Returns
    -------
    Leaderboard
    """
    items = [tasks] if isinstance(tasks, (str, os.PathLike, PopulationLike)) else tasks
    if not isinstance(items, Sequence) or not items:
        raise InputError(f"`tasks` must be a task folder, a task, or a non-empty list of them; got {tasks!r}.")
    options = as_options(options)
    loaded = [as_task(t, trust_code=options.trust_code) for t in items]
    folders = [Path(task.directory).resolve() for task in loaded]
    for i, folder in enumerate(folders):
        if folder in folders[:i]:  # the final score is a mean over tasks: a repeated one would weigh twice
            raise InputError(f"`tasks` names {str(loaded[i].directory)!r} twice; give each task once.")
    seed = as_seed(options.random_state)
    chosen = as_measures(list_measures() if measures is None else measures, seed)
    scored: list[TaskScores] = []
    saturated: dict[str, int] = {}
    for task in loaded:
        scores = score_task(task, chosen, budget_s=budget_s, checkpoint_dir=checkpoint_dir,
                            options=options.replace(random_state=seed))
        for name, count in mark_saturation(scores, chosen, len(task.train_data()[1])).items():
            saturated[name] = saturated.get(name, 0) + count
        scored.append(scores)
    return rank(scored, saturated)


# ---------------------------------------------------------------------------- ranking a user's models
#: fitaudit's leaderboard: measure -> (final score = 100 x mean official CMI, mean Kendall tau), from
#: benchmarks/results/pgdl_leaderboard/leaderboard.json (tests check they agree)
OUR_LEADERBOARD: dict[str, tuple[float, float]] = {
    "noisy_gap": (47.04, 0.672),
    "augmentation_robustness": (15.30, 0.339),
    "mixup_margin": (14.81, 0.284),
    "pacbayes_flatness": (14.01, 0.345),
    "distance_from_init": (12.07, -0.479),
    "inverse_margin": (11.46, 0.207),
    "pmv_slope": (11.44, 0.003),
    "dbi_mixup": (10.75, 0.099),
    "pacbayes_mag_orig": (10.58, -0.049),
    "weight_norm": (10.43, -0.361),
    "knn_label_variation": (10.03, 0.320),
    "sharpness": (9.69, 0.043),
    "pacbayes_mag_init": (9.19, -0.066),
    "pacbayes_init": (9.11, -0.034),
    "pacbayes_orig": (9.00, -0.029),
    "examiner_worst_case": (8.10, 0.127),
    "sharpness_mag_flatness": (8.00, 0.238),
    "augmentation_margin": (7.63, 0.233),
    "log_spec_product": (7.52, -0.285),
    "log_spec_sum": (7.52, -0.285),
    "path_norm_over_margin": (7.44, 0.003),
    "jacobian_norm": (6.78, 0.325),
    "dist_spec": (6.78, -0.261),
    "pacbayes_mag_flatness": (6.73, 0.230),
    "fro_over_spec": (6.46, -0.099),
    "sharpness_flatness": (6.37, 0.237),
    "log_spec_product_over_margin": (6.08, -0.159),
    "log_spec_sum_over_margin": (6.08, -0.159),
    "log_spec_orig_main": (5.71, -0.168),
    "log_spec_init_main": (5.51, -0.231),
    "adversarial_gap": (5.37, 0.152),
    "path_norm": (4.95, -0.018),
    "log_fro_product_over_margin": (4.35, -0.336),
    "log_fro_sum_over_margin": (4.35, -0.336),
    "log_fro_product": (4.03, -0.370),
    "log_fro_sum": (4.03, -0.370),
    "dist_fro": (2.91, -0.373),
    "param_norm": (2.19, -0.296),
    "parameter_count": (0.00, -0.199),
    "vc_dim": (0.00, -0.199),
}
#: the tasks behind :data:`OUR_LEADERBOARD`
OUR_LEADERBOARD_TASKS = "fitaudit's zoos digits-default (24 models), shapes-quick (8) and shapes-default (24)"
#: measures that are references, not predictors (noisy_gap reads the test accuracy)
REFERENCES = ("noisy_gap",)

#: the caveats printed with every ranking (docs/pgdl.md#your-own-models-import-and-rank)
CAVEATS = (
    "The measures order models by predicted generalization gap; their values are not estimates of the gap.",
    f"Leaderboard scores are 100 x the competition's conditional mutual information on {OUR_LEADERBOARD_TASKS}, "
    "not on the competition's tasks (there: DBI x mixup 22.92 > mixup margin 13.93 > label variation 9.99 > "
    "augmentation margin 9.29); small grids say little and our ordering differs from the competition's.",
    "That score conditions on the other hyperparameters: an ordering of models that differ in one hyperparameter "
    "is better supported than one across models that differ in several at once.",
    "The score is only partly sensitive to a measure's sign; only measures whose mean Kendall tau on our zoos is "
    "positive (larger value, larger gap) are used here.",
)


@dataclasses.dataclass(repr=False)
class ModelRanking(Result):
    """A user's models ordered by predicted gap with the measures that lead fitaudit's leaderboard.

    Attributes
    ----------
    task : str
    model_ids : list of str
    gaps : dict
        Model id -> train_acc - test_acc where known (None otherwise).
    entries : list of dict
        Per measure: ``measure``, ``leaderboard_score``, ``leaderboard_kendall``,
        ``values`` (model id -> value or None), ``order`` (model ids, largest
        predicted gap first), ``kendall_here`` (tau against the known gaps,
        or None), ``note``.
    caveats : list of str
    leading : bool
        The measures are the leaderboard's leading ones (not chosen by the caller).
    """

    task: str
    model_ids: list[str]
    gaps: dict[str, float | None]
    entries: list[dict[str, Any]]
    caveats: list[str]
    leading: bool = True

    def _summary_fields(self) -> list[str]:
        return ["task", "model_ids", "entries"]


def leading_measures(formats: Sequence[str], n: int = 3, *, with_init: bool = True) -> list[str]:
    """The ``n`` best measures of :data:`OUR_LEADERBOARD` that read every format in ``formats``.

    References (``noisy_gap``), measures with a non-positive mean Kendall
    tau and, without ``with_init``, measures needing the initial network are
    skipped.
    """
    chosen = []
    for name, (_, tau) in sorted(OUR_LEADERBOARD.items(), key=lambda item: -item[1][0]):
        cls = measure_class(name)
        if name in REFERENCES or tau <= 0 or not set(formats) <= set(cls.formats) or (cls.needs_init and not with_init):
            continue
        chosen.append(name)
        if len(chosen) == n:
            break
    return chosen


#: how many leading measures :func:`rank_models` ranks by when no measure is named
DEFAULT_N_MEASURES = 3


def rank_models(
    task: Any,
    measures: Any = None,
    *,
    n_measures: int | None = None,
    budget_s: float | None = COMPETITION_BUDGET_S,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    options: RunOptions | None = None,
) -> ModelRanking:
    """Order a population's models by predicted gap with the leading measures (``fitaudit pgdl rank``).

    Parameters
    ----------
    task : path or task
        A population (:func:`fitaudit.pgdl.population_import.import_population`) or a PGDL task.
    measures : list of str, optional
        Default: :func:`leading_measures` for the population's model formats.
    n_measures : int, optional
        How many leading measures rank the models when ``measures`` is not
        given (default :data:`DEFAULT_N_MEASURES`); with ``measures``, an error.
    budget_s, checkpoint_dir, options
        As :func:`~fitaudit.pgdl.harness.score_task`.
    """
    from fitaudit._validation import check_int
    from fitaudit.pgdl.kendall import kendall_tau

    if measures is not None and n_measures is not None:
        raise InputError("give `measures` (the measures to rank by) or `n_measures` (how many leading ones), not both.")
    options = as_options(options)
    loaded = as_task(task, trust_code=options.trust_code)
    n_measures = check_int(DEFAULT_N_MEASURES if n_measures is None else n_measures, "n_measures", minimum=1)
    formats = sorted(set(loaded.formats.values()) or {"torch"})
    with_init = all(loaded.has_initial(i) for i in loaded.model_ids)
    names = leading_measures(formats, n_measures, with_init=with_init) if measures is None else measures
    seed = as_seed(options.random_state)
    chosen = as_measures(names, seed)
    check_formats(loaded, chosen)
    scores = score_task(loaded, chosen, budget_s=budget_s, checkpoint_dir=checkpoint_dir,
                        options=options.replace(random_state=seed))
    mark_saturation(scores, chosen, len(loaded.train_data()[1]))
    ids = [str(i) for i in loaded.model_ids]
    gaps: dict[str, float | None] = {}
    for i in ids:
        metrics = loaded.configs[i].get("metrics", {})
        try:
            gaps[i] = float(metrics["train_acc"]) - float(metrics["test_acc"])
        except (KeyError, TypeError, ValueError):
            gaps[i] = None
    entries = []
    for score in scores.scores:
        known = [i for i in ids if score.values[i] is not None]
        order = sorted(known, key=lambda i: -float(score.values[i]))  # type: ignore[arg-type]
        here = None
        if len(known) == len(ids) and all(gaps[i] is not None for i in ids) and len(ids) > 1:
            here = kendall_tau(np.array([score.values[i] for i in ids], dtype=float), np.array([gaps[i] for i in ids], dtype=float))
        board = OUR_LEADERBOARD.get(score.measure)
        entries.append({
            "measure": score.measure,
            "leaderboard_score": None if board is None else board[0],
            "leaderboard_kendall": None if board is None else board[1],
            "values": score.values,
            "order": order,
            "kendall_here": here,
            "note": score.note,
        })
    return ModelRanking(task=scores.task, model_ids=ids, gaps=gaps, entries=entries, caveats=list(CAVEATS),
                        leading=measures is None)
