"""Score complexity measures on a PGDL task the way the competition did.

:func:`score_task` computes every measure on every model of a task
(:func:`fitaudit.pgdl.load_task`) and then the four ranking metrics:
Kendall's tau-a, the granulated Kendall Psi, the official conditional MI
(the competition's leaderboard number, :func:`~fitaudit.pgdl.official_cmi`)
and the general conditional MI with conditioning sets of at most two
hyperparameters (:func:`~fitaudit.pgdl.conditional_mi`).

The competition's budget
------------------------
A submission had 5 minutes of computation per model, pooled over the task
(docs/pgdl.md#budget): here each measure gets ``budget_s * n_models``
seconds of measure time on a task. The time of every model is recorded; a
measure whose pooled time goes past the budget is stopped (the remaining
models are not computed, as the competition's ingestion stopped a
submission), ``over_budget`` is set and its official score is 0: the
competition gave a submission that ran out of time a score of 0. The time
counted is the measure's own (wall clock around the call, plus the time of
work it reused from another measure's cache, such as the PAC-Bayes noise
search, so that each measure is timed as if it ran alone); reading the
model files and the data is shared by all measures and not counted. Nothing is
dropped silently: a model a measure fails on is listed in ``errors`` with
the message, and the metrics of that measure are then left empty with a
note.

Resuming and parallel work
--------------------------
With ``checkpoint_dir`` each finished (measure, model) unit is stored in a
:class:`~fitaudit.checkpoint.CheckpointStore` under a key fingerprinting the
measure (class, its ``compute`` code and settings, seed), the model's files
(config, trained and initial weights) and the training data; a rerun reuses
exactly those units, with their recorded times, so the budget accounting is
the same after a kill (:attr:`TaskScores.reused_units` counts them). The
work is split by model: one unit of :func:`fitaudit.parallel.parallel_map`
(progress bar, ``n_jobs``) per model, running that model's remaining
measures one after the other on one loaded record, so work the measures
share on a model (the PAC-Bayes noise-scale search, the layer spectra; see
:class:`~fitaudit.measures.base.WorkCache`) is done once per model whatever
``n_jobs`` is, and the values are the same as with ``n_jobs`` 1. Each
(measure, model) result is stored as its model's unit returns (a kill loses
the models in flight); its ``skip`` hook is the budget (a measure over it
is dropped from the models not yet dispatched) and a unit that failed is
not stored, so a rerun tries it again.

Seeds
-----
Every measure is constructed with the same integer seed on every model
(common random numbers: e.g. the same training subsample for every model),
derived from ``random_state``; the same seed gives the same numbers whatever
``n_jobs``.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit._validation import check_float
from fitaudit.checkpoint import CheckpointStore, code_fingerprint, fingerprint
from fitaudit.measures import Measure, ModelRecord, get_measure
from fitaudit.measures.base import measure_clock
from fitaudit.models.fingerprint import model_fingerprint
from fitaudit.models.torch_adapter import move_model
from fitaudit.options import RunOptions, as_options
from fitaudit.parallel import check_n_jobs, parallel_map
from fitaudit.pgdl.conditional_mi import conditional_mi
from fitaudit.pgdl.decision import measure_score_verdict, task_scores_verdict
from fitaudit.pgdl.granulated import granulated_kendall
from fitaudit.pgdl.grid import check_hparams
from fitaudit.pgdl.kendall import kendall_tau
from fitaudit.pgdl.official_cmi import official_cmi
from fitaudit.pgdl.population_like import PopulationLike
from fitaudit.random import as_seed
from fitaudit.results import Result
from fitaudit.verdict import Verdict

#: the competition's budget: seconds of computation per model, pooled over a task
COMPETITION_BUDGET_S = 300.0

#: largest conditioning set of the general conditional MI (Fantastic, sec. 6)
GENERAL_CMI_MAX_SET = 2

_UNIT_VERSION = "fitaudit.pgdl.score_task/1"


@dataclasses.dataclass(repr=False)
class MeasureScore(Result):
    """One measure on one task: its values, times and the four ranking metrics.

    Attributes
    ----------
    measure : str
    task : str
    values : dict
        Model id -> measure value (``None``: not computed, see ``errors`` and
        ``over_budget``).
    seconds : dict
        Model id -> seconds the measure took on it (failures included).
    total_seconds : float
        Pooled measure time over the task.
    budget_s : float or None
        The pooled budget (per-model budget x number of models); None: no budget.
    over_budget : bool
        The pooled time went past ``budget_s``; the remaining models were not computed.
    errors : dict
        Model id -> the error the measure raised on it.
    kendall, psi : float or None
        Kendall's tau-a and granulated Kendall Psi (Metric 1).
    psi_per_hparam : dict
        ``psi_i`` per hyperparameter.
    official_cmi : float or None
        The official scorer's conditional MI (Metric 2), before the x100.
    official_score : float or None
        What the competition counted: ``official_cmi``, or 0 when over budget;
        None when the official scorer would leave this task out (see ``note``).
    general_cmi : float or None
        ``min over |O| <= 2`` of ``I(V_mu; V_g | O) / H(V_g | O)``.
    general_cmi_set : list of str or None
        The conditioning set reaching ``general_cmi``.
    note : str
        Why a metric is missing, or what limits it.
    """

    measure: str
    task: str
    values: dict[str, float | None]
    seconds: dict[str, float]
    total_seconds: float
    budget_s: float | None
    over_budget: bool
    errors: dict[str, str]
    kendall: float | None = None
    psi: float | None = None
    psi_per_hparam: dict[str, float | None] = dataclasses.field(default_factory=dict)
    official_cmi: float | None = None
    official_score: float | None = None
    general_cmi: float | None = None
    general_cmi_set: list[str] | None = None
    note: str = ""

    def _summary_fields(self) -> list[str]:
        return ["measure", "task", "kendall", "psi", "official_cmi", "official_score", "general_cmi",
                "total_seconds", "over_budget", "note"]

    @property
    def seconds_per_model(self) -> float:
        """Mean measure time per model computed."""
        return float(np.mean(list(self.seconds.values()))) if self.seconds else 0.0

    def verdict(self, **context: Any) -> Verdict:
        """One measure's scores, a measurement (:func:`fitaudit.pgdl.decision.measure_score_verdict`)."""
        return measure_score_verdict(self, **context)


@dataclasses.dataclass(repr=False)
class TaskScores(Result):
    """Every measure scored on one task (:func:`score_task`).

    Attributes
    ----------
    task : str
        The task folder.
    n_models : int
    hparams : list of str
        The hyperparameter names of the grid.
    budget_per_model_s : float or None
    random_state : int
        The seed every measure was constructed with.
    scores : list of MeasureScore
    reused_units : int
        (measure, model) units read from ``checkpoint_dir`` (finished by an
        earlier run) instead of computed.
    """

    task: str
    n_models: int
    hparams: list[str]
    budget_per_model_s: float | None
    random_state: int
    scores: list[MeasureScore]
    reused_units: int = 0

    def _summary_fields(self) -> list[str]:
        return ["task", "n_models", "hparams", "budget_per_model_s", "scores"]

    def score(self, measure: str) -> MeasureScore:
        """The :class:`MeasureScore` of ``measure``."""
        for entry in self.scores:
            if entry.measure == measure:
                return entry
        raise InputError(f"`measure` must be one of {', '.join(s.measure for s in self.scores)}; got {measure!r}.")

    def verdict(self, **context: Any) -> Verdict:
        """The best measure on this task, a measurement (:func:`fitaudit.pgdl.decision.task_scores_verdict`)."""
        return task_scores_verdict(self, **context)


# ---------------------------------------------------------------------------- inputs
def as_task(task: Any, *, trust_code: bool = False) -> PopulationLike:
    """A loaded task, from a task object or its folder (opened with ``trust_code``, see :func:`fitaudit.pgdl.load_task`)."""
    if isinstance(task, (str, os.PathLike)):
        from fitaudit.pgdl.task import load_task

        return load_task(task, trust_code=trust_code)
    if not isinstance(task, PopulationLike):
        raise InputError(
            f"`task` must be a PGDL task folder or a loaded task (fitaudit.pgdl.load_task); got {type(task).__name__}."
        )
    return task


def as_measures(measures: Any, random_state: int) -> list[Measure]:
    """Measure instances from names, instances, or a list of them (names get ``random_state=random_state``)."""
    items = [measures] if isinstance(measures, (str, Measure)) else measures
    if not isinstance(items, Sequence) or not items:
        raise InputError(f"`measures` must be a measure name, a Measure, or a non-empty list of them; got {measures!r}.")
    out: list[Measure] = []
    for item in items:
        if isinstance(item, str):
            out.append(get_measure(item, random_state=random_state))
        elif isinstance(item, Measure):
            out.append(item)
        else:
            raise InputError(f"`measures` must hold measure names or Measure instances; got {type(item).__name__}.")
    names = [m.name for m in out]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise InputError(f"`measures` names {', '.join(repeated)} more than once.")
    return out


def task_model_fingerprint(task: PopulationLike, model_id: str) -> str:
    """A fingerprint of a task model: its files (config, weights, initial weights; an ONNX file with its
    external data) or loaded weights, and its entry in ``model_configs.json`` (hyperparameters and
    metrics, which the measures may read: ``noisy_gap`` reads the gap)."""
    entry = task.configs.get(model_id, {})
    path = Path(task.model_dir(model_id))
    if path.is_file() or (path.is_dir() and any(p.is_file() for p in path.rglob("*"))):
        return fingerprint(model_fingerprint(path), entry)
    initial = task.model(model_id, initial=True) if task.has_initial(model_id) else None
    return fingerprint(task.model(model_id), initial, entry)


def task_fingerprint(task: PopulationLike) -> str:
    """A fingerprint of everything a task's scores come from: every model (:func:`task_model_fingerprint`,
    config entries included) and the training data the measures read."""
    return fingerprint([task_model_fingerprint(task, str(i)) for i in task.model_ids], *task.train_data())


def _measure_key(measure: Measure) -> str:
    # code_fingerprint: all of fitaudit's source, and the module of a measure of the user's own (register_measure)
    return fingerprint(type(measure), vars(measure), code_fingerprint(type(measure)))


# ---------------------------------------------------------------------------- work
def _record(task: Any, model_id: str, x: np.ndarray, y: np.ndarray, needs_init: bool, device: str = "cpu") -> ModelRecord:
    """One model's record, its networks moved to ``device`` once (the measures run where the model is)."""
    initial = task.model(model_id, initial=True) if needs_init and task.has_initial(model_id) else None
    return ModelRecord(
        model=move_model(task.model(model_id), device),
        initial_model=move_model(initial, device),
        train_x=x,
        train_y=y,
        hparams=task.hparams(model_id),
        metrics=task.metrics(model_id),
        model_id=model_id,
    )


class _Ledger:
    """Values, times and errors of every measure while the task is scored."""

    def __init__(self, measures: list[Measure], model_ids: list[str], budget: float | None) -> None:
        self.budget = budget
        self.values: dict[str, dict[str, float | None]] = {m.name: dict.fromkeys(model_ids) for m in measures}
        self.seconds: dict[str, dict[str, float]] = {m.name: {} for m in measures}
        self.errors: dict[str, dict[str, str]] = {m.name: {} for m in measures}

    def add(self, name: str, model_id: str, unit: dict[str, Any]) -> None:
        self.values[name][model_id] = unit["value"]
        self.seconds[name][model_id] = float(unit["seconds"])
        if unit.get("error"):
            self.errors[name][model_id] = unit["error"]

    def spent(self, name: str) -> float:
        return float(sum(self.seconds[name].values()))

    def over(self, name: str) -> bool:
        return self.budget is not None and self.spent(name) > self.budget


def _check_onnx_device(task: Any, device: str) -> None:
    """A population with ONNX models and a device onnxruntime cannot use here: one line before any work."""
    if "onnx" in task.formats.values():
        from fitaudit.models.onnx_adapter import providers

        providers(import_optional("onnxruntime", "running an ONNX model inside the measures"), device)


def _score_model(
    unit: tuple[str, list[str]], *, task: Any, x: np.ndarray, y: np.ndarray, needs_init: bool, measures: dict[str, Measure],
    device: str = "cpu",
) -> dict[str, dict[str, Any]]:
    """The measures named in ``unit`` on its model: measure name -> ``{value, seconds, error}``.

    The measures run one after the other on one loaded record, in the
    process that runs the unit, so work they share on the model (the
    record's :class:`~fitaudit.measures.base.WorkCache`: the PAC-Bayes
    noise-scale search, the layer spectra) is done once per model whatever
    ``n_jobs``. An error is recorded, never raised.
    """
    model_id, names = unit
    try:
        record = _record(task, model_id, x, y, needs_init, device)
    except Exception as exc:  # a model that cannot be loaded fails every measure, by name
        error = f"loading the model: {type(exc).__name__}: {exc}"
        return {name: {"value": None, "seconds": 0.0, "error": error} for name in names}
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        with measure_clock(record) as timing:  # as if alone: work cached by another measure is charged too
            try:
                value: float | None = measures[name](record)
                error_text: str | None = None
            except Exception as exc:  # recorded per model, never dropped
                value, error_text = None, f"{type(exc).__name__}: {exc}"
        out[name] = {"value": value, "seconds": timing.seconds, "error": error_text}
    return out


class _Plan:
    """The work of a scoring run: one unit per model, holding its measures not read from the checkpoint.

    A unit is ``(model_id, names)``. :meth:`skip` is the budget, asked just
    before a unit is dispatched (:func:`fitaudit.parallel.parallel_map`): it
    drops from the unit the measures over their budget then, and skips a
    unit left with none. With ``n_jobs`` 1 every earlier model's results are
    in by then, so a measure stops exactly where it would if its units ran
    one by one.
    """

    def __init__(self, model_ids: list[str], names: list[str], done: set[tuple[str, str]], ledger: _Ledger) -> None:
        self.ledger = ledger
        self.units: list[tuple[str, list[str]]] = []
        for model_id in model_ids:
            pending = [name for name in names if (model_id, name) not in done]
            if pending:
                self.units.append((model_id, pending))

    def skip(self, index: int) -> bool:
        names = self.units[index][1]
        names[:] = [name for name in names if not self.ledger.over(name)]
        return not names


# ---------------------------------------------------------------------------- metrics
def _gaps(configs: dict[str, Any], model_ids: list[str]) -> np.ndarray:
    gaps = []
    for model_id in model_ids:
        metrics = configs[model_id].get("metrics", {})
        try:
            gaps.append(float(metrics["train_acc"]) - float(metrics["test_acc"]))
        except (KeyError, TypeError, ValueError):
            raise InputError(f"model_configs.json: model {model_id!r} lacks numeric metrics.train_acc/test_acc.") from None
    return np.array(gaps)


def _metrics(score: MeasureScore, configs: dict[str, Any], model_ids: list[str]) -> None:
    """Fill the four ranking metrics of ``score`` in place (or say why not in ``note``)."""
    notes = []
    if score.over_budget:
        notes.append("over the time budget: official score 0, as the competition scored it")
        score.official_score = 0.0
    missing = [i for i in model_ids if score.values[i] is None]
    if missing:
        notes.append(f"no value for {len(missing)} of {len(model_ids)} models: no metric")
        if score.errors:
            first = next(iter(score.errors))
            notes.append(f"{len(score.errors)} error(s), e.g. model {first!r}: {score.errors[first]}")
        score.note = "; ".join(notes)
        return
    mu = np.array([score.values[i] for i in model_ids], dtype=float)
    gap = _gaps(configs, model_ids)
    hparams = [{k: v["current_value"] for k, v in configs[i]["hparams"].items()} for i in model_ids]
    names, _, _ = check_hparams(hparams, len(model_ids))
    score.kendall = kendall_tau(mu, gap)
    try:
        psi = granulated_kendall(mu, gap, hparams)
        score.psi, score.psi_per_hparam = psi.psi, psi.per_hparam
    except InputError as exc:
        notes.append(f"no Psi: {exc}")
    general = conditional_mi(mu, gap, hparams, max_set_size=min(GENERAL_CMI_MAX_SET, len(names)))
    score.general_cmi, score.general_cmi_set = general.score, general.argmin
    try:
        score.official_cmi = official_cmi(configs, dict(zip(model_ids, mu.tolist())))
        if not score.over_budget:
            score.official_score = score.official_cmi
        if len(names) == 2:
            notes.append("two hyperparameters: the official CMI is 0 for every measure")
    except InputError as exc:
        notes.append(f"no official CMI (the official scorer leaves this task out): {exc}")
    score.note = "; ".join(notes)


# ---------------------------------------------------------------------------- entry point

def score_task(
    task: Any,
    measures: Any,
    *,
    budget_s: float | None = COMPETITION_BUDGET_S,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    options: RunOptions | None = None,
) -> TaskScores:
    """Compute measures on every model of a PGDL task and rank them by the four metrics.

    Parameters
    ----------
    task : path or task
        A task folder in the competition's format, or a task from
        :func:`fitaudit.pgdl.load_task`.
    measures : str, Measure or list of them
        Registered names (:func:`fitaudit.measures.list_measures`) or instances.
    budget_s : float or None
        Seconds per model, pooled over the task, for each measure (the
        competition's 300); None: no budget.
    checkpoint_dir : path, optional
        Folder of finished (measure, model) units; a rerun resumes.
    options : RunOptions, optional
        How it runs (:class:`fitaudit.options.RunOptions`): ``random_state``
        seeds the measures (one integer seed shared by every model);
        ``n_jobs`` models are scored in parallel (joblib, or the Dask
        cluster of ``dask_scheduler``), each with all its measures in one
        process, so that work the measures share on a model (the PAC-Bayes
        noise-scale search) is done once (measure times are then taken under
        contention); ``progress`` shows a bar over the models to score;
        ``trust_code`` lets a population's torch models that name their own
        architecture file run it (:func:`fitaudit.pgdl.load_task`);
        ``device`` is where the measures run (``"cuda"`` on a GPU): each
        model (and its initial weights) is moved there once, every batch
        goes there, and only the numbers come back. An ONNX model of a
        population runs in onnxruntime with that device's providers
        (:func:`fitaudit.models.onnx_adapter.providers`; a device it cannot
        use is refused before any work). The device is part of each unit's
        checkpoint key (a GPU's floating-point results differ from the
        CPU's in the last digits).

    Returns
    -------
    TaskScores
        One :class:`MeasureScore` per measure, in the order given.
    """
    from fitaudit.models.torch_adapter import resolve_device  # here: it loads the inference engines

    options = as_options(options)
    device = str(resolve_device(options.device, name="device"))
    task = as_task(task, trust_code=options.trust_code)
    _check_onnx_device(task, device)
    if budget_s is not None:
        budget_s = check_float(budget_s, "budget_s", low=0, low_inclusive=False)
    n_jobs = check_n_jobs(options.n_jobs)
    seed = as_seed(options.random_state)
    measures = as_measures(measures, seed)
    model_ids = [str(i) for i in task.model_ids]
    if not model_ids:
        raise InputError(f"`task` {str(task.directory)!r} has no models.")
    x, y = task.train_data()
    ledger = _Ledger(measures, model_ids, None if budget_s is None else budget_s * len(model_ids))
    names = [m.name for m in measures]
    store, keys, done = None, {}, set()
    if checkpoint_dir is not None:
        store = CheckpointStore(checkpoint_dir)
        data_key = fingerprint(x, y)
        measure_keys = {m.name: _measure_key(m) for m in measures}
        for model_id in model_ids:
            model_key = task_model_fingerprint(task, model_id)
            for name in names:
                key = keys[model_id, name] = CheckpointStore.key(_UNIT_VERSION, measure_keys[name], model_key, data_key,
                                                                 device)
                if store.has(key):  # finished by an earlier run: reused with its recorded time
                    ledger.add(name, model_id, store.load(key))
                    done.add((model_id, name))
    plan = _Plan(model_ids, names, done, ledger)

    def finished(index: int, results: dict[str, dict[str, Any]]) -> None:
        model_id = plan.units[index][0]
        for name, unit in results.items():
            if store is not None and unit["error"] is None:  # a failure is not stored: a rerun tries it again
                unit = store.save(keys[model_id, name], unit, item=[model_id, name])
            ledger.add(name, model_id, unit)

    run = functools.partial(
        _score_model, task=task, x=x, y=y, needs_init=any(m.needs_init for m in measures),
        measures={m.name: m for m in measures}, device=device,
    )  # fmt: skip
    with options.running():
        parallel_map(run, plan.units, n_jobs=n_jobs, progress=options.progress, desc="models", skip=plan.skip,
                     on_result=finished)
    scores = []
    for m in measures:
        score = MeasureScore(
            measure=m.name,
            task=str(task.directory),
            values=ledger.values[m.name],
            seconds=ledger.seconds[m.name],
            total_seconds=ledger.spent(m.name),
            budget_s=ledger.budget,
            over_budget=ledger.over(m.name),
            errors=ledger.errors[m.name],
        )
        _metrics(score, task.configs, model_ids)
        scores.append(score)
    first = task.configs[model_ids[0]].get("hparams", {})
    return TaskScores(
        task=str(task.directory),
        n_models=len(model_ids),
        hparams=list(first),
        budget_per_model_s=budget_s,
        random_state=seed,
        scores=scores,
        reused_units=len(done),
    )
