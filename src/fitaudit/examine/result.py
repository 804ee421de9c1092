"""The result of an examination: both of the paper's numbers, curves, the query log.

Shu, Liu, Qiu, Yuille (AAAI 2020, Algorithm 1; docs/examiner.md#what-is-measured) report
E_examiner = (1/N) sum_i l_i^T, the loss of the T-th query averaged over
instances (as the average true-class probability: lower = harsher), with
curves over t. The definition E = (1/N) sum_i max_s L(...) asks instead for
the worst case; fitaudit reports both, named:

``final_loss``
    l_i^T: the loss of the T-th step (the mean over its queries when the
    examiner asks several per step, e.g. the RL examiner's batch of 32);
``worst_loss``
    max_{t <= T} l_i^t over every query of the first T steps (``best_loss``
    is the minimum, the number that matters when looking for strength).

The true-class probabilities come with them (``final_``, ``min_`` and
``max_true_class_probability``), and the mean over instances of each.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit.checkpoint import atomic_save_npz
from fitaudit.data.factors import FactorSpace
from fitaudit.examine.decision import examination_contradiction, examination_verdict
from fitaudit.results import Result, to_jsonable
from fitaudit.verdict import Verdict

#: columns of the query log besides the factors
RESERVED_COLUMNS: tuple[str, ...] = (
    "instance", "label", "step", "query", "loss", "predicted", "true_class_probability",
)

_ARRAY_FIELDS = (
    "instances", "labels", "final_loss", "worst_loss", "best_loss", "final_true_class_probability",
    "min_true_class_probability", "max_true_class_probability", "extreme_factors", "extreme_step",
)


@dataclasses.dataclass(repr=False)
class ExaminationResult(Result):
    """What :func:`fitaudit.examine.examine` found (arrays are per examined instance).

    Attributes
    ----------
    examiner : str
    examiner_settings : dict
        The examiner's constructor settings (without the seed).
    loss : str
    maximize : bool
        True: looking for weakness; False: for strength.
    steps : int
        T.
    queries_per_step : int
        q: queries per instance per step.
    n_model_queries : int
        Model queries of the examination: ``N * T * q`` (compare examiners at
        equal budgets with it, not only at equal T).
    n_reference_queries : int
        Uniform random queries scored as the weakness report's baseline.
    factor_names : list of str
    factor_space : dict
        The examined space (:meth:`FactorSpace.to_dict`).
    generator : dict
        The generator's description.
    class_names : list of str or None
    instances, labels : ndarray (N,)
        Generator indices of the examined instances and their labels.
    final_loss, worst_loss, best_loss : ndarray (N,)
        l^T, the maximum and the minimum over the first T steps' queries.
    final_true_class_probability : ndarray (N,)
        True-class probability at step T (mean over the step's queries).
    min_true_class_probability, max_true_class_probability : ndarray (N,)
        Over every query of the first T steps.
    extreme_factors : ndarray (N, n_factors)
        Factors of the most extreme query found per instance (highest loss
        when ``maximize``, lowest otherwise): re-render them with
        :meth:`extreme_inputs`.
    extreme_step : ndarray (N,)
        The step (1..T) of that query.
    curves : dict
        ``curves[quantity][kind]`` with quantity ``"loss"`` or
        ``"true_class_probability"`` and kind ``"current"`` (the step's mean)
        or ``"running"`` (the most extreme so far in the examined direction),
        arrays ``(N, T)``.
    queries : dict of ndarray
        The query log, one row per query: ``instance``, ``label``, ``step``
        (1..T), ``query`` (0..q-1), every factor, ``loss``, ``predicted``,
        ``true_class_probability``. May be left out of :meth:`to_dict`.
    reference_queries : dict of ndarray
        The same columns for the uniform random reference queries (step 0).
    weakness : WeaknessReport or None
    sensitivity : dict or None
        Accuracy per bin of every factor among the uniform random reference
        queries (:func:`fitaudit.examine.profile.sensitivity_profile`).
    space_check : dict or None
        Accuracy on untouched inputs vs under random factors and whether the
        space is foreign to the model
        (:func:`fitaudit.examine.scenarios.space_check`); set by the caller
        that knows the untouched accuracy.
    pipeline : dict or None
        For a user's images: the evaluation pipeline used, the one the model
        records and the accuracy on the untouched images under each
        (:meth:`fitaudit.data.pipeline_rule.PipelineChoice.to_dict`); set by the caller.
    random_state : int
    seeds : list of int
        One seed per chunk of instances.
    chunk_size : int
    seconds : float
    backend : str or None
        How a torch model was run (``"eager"`` unless another backend was
        named; :func:`fitaudit.examine.examine`); None for other models.
        A rerun with the same backend, seed and thread count repeats the
        numbers; through another backend the adaptive search may go
        elsewhere.
    """

    ALIGNED = (_ARRAY_FIELDS,)  # one value (or row) per examined instance

    examiner: str
    examiner_settings: dict[str, Any]
    loss: str
    maximize: bool
    steps: int
    queries_per_step: int
    n_model_queries: int
    n_reference_queries: int
    factor_names: list[str]
    factor_space: dict[str, Any]
    generator: dict[str, Any]
    class_names: list[str] | None
    instances: Any
    labels: Any
    final_loss: Any
    worst_loss: Any
    best_loss: Any
    final_true_class_probability: Any
    min_true_class_probability: Any
    max_true_class_probability: Any
    extreme_factors: Any
    extreme_step: Any
    curves: dict[str, Any]
    random_state: int
    seeds: list[int]
    chunk_size: int
    queries: dict[str, Any] = dataclasses.field(default_factory=dict)
    reference_queries: dict[str, Any] = dataclasses.field(default_factory=dict)
    weakness: Any = None
    seconds: float = 0.0
    sensitivity: dict[str, Any] | None = None
    space_check: dict[str, Any] | None = None
    pipeline: dict[str, Any] | None = None
    backend: str | None = None

    def __post_init__(self) -> None:
        for name in _ARRAY_FIELDS:
            setattr(self, name, np.asarray(getattr(self, name)))
        self.instances = self.instances.astype(np.int64)
        self.labels = self.labels.astype(np.int64)
        self.extreme_step = self.extreme_step.astype(np.int64)
        self.extreme_factors = self.extreme_factors.reshape(len(self.instances), len(self.factor_names))
        self.curves = {q: {k: np.asarray(v, dtype=float) for k, v in kinds.items()} for q, kinds in self.curves.items()}
        self.queries = {k: np.asarray(v) for k, v in self.queries.items()}
        self.reference_queries = {k: np.asarray(v) for k, v in self.reference_queries.items()}

    # ----------------------------------------------------------------- numbers
    @property
    def e_examiner(self) -> float:
        """The paper's E_examiner: the mean over instances of the T-th step's loss."""
        return float(np.mean(self.final_loss))

    @property
    def mean_final_true_class_probability(self) -> float:
        """Mean true-class probability at step T (the paper's tables; lower = harsher)."""
        return float(np.mean(self.final_true_class_probability))

    @property
    def extreme_true_class_probability(self) -> np.ndarray:
        """Per instance: the lowest true-class probability found (weakness) or the highest (strength)."""
        return self.min_true_class_probability if self.maximize else self.max_true_class_probability

    @property
    def mean_extreme_true_class_probability(self) -> float:
        """Mean over instances of :attr:`extreme_true_class_probability`: the worst (or best) case found."""
        return float(np.mean(self.extreme_true_class_probability))

    @property
    def failure_rate(self) -> float:
        """Fraction of the examination's queries the model gets wrong."""
        q = self.queries
        return float(np.mean(q["predicted"] != q["label"])) if q else float("nan")

    @property
    def reference_failure_rate(self) -> float:
        """Fraction of the uniform random reference queries the model gets wrong (NaN without any)."""
        r = self.reference_queries
        return float(np.mean(r["predicted"] != r["label"])) if r and len(r["label"]) else float("nan")

    def curve(self, quantity: str = "true_class_probability", kind: str = "current", by: str = "all") -> Any:
        """Curves over t = 1..T.

        Parameters
        ----------
        quantity : {"true_class_probability", "loss"}
        kind : {"current", "running"}
            The step's value, or the most extreme so far (the running worst
            when looking for weakness).
        by : {"all", "instance", "class"}
            Mean over instances ``(T,)``, per instance ``(N, T)``, or a dict
            class name -> mean over that class's instances ``(T,)``.
        """
        if quantity not in self.curves or kind not in self.curves[quantity]:
            raise InputError(f"`quantity`/`kind` must be one of {sorted(self.curves)} / ['current', 'running'].")
        values = self.curves[quantity][kind]
        if by == "instance":
            return values
        if by == "all":
            return values.mean(axis=0)
        if by == "class":
            names = self.class_names or [str(c) for c in range(int(self.labels.max()) + 1)]
            return {names[c]: values[self.labels == c].mean(axis=0) for c in np.unique(self.labels)}
        raise InputError(f"`by` must be 'all', 'instance' or 'class'; got {by!r}.")

    def at_steps(self, steps: list[int], quantity: str = "true_class_probability") -> dict[int, float]:
        """Mean over instances of the step-t value (t = 0: the first step, before any update)."""
        current = self.curve(quantity, "current")
        out = {}
        for t in steps:
            if not 0 <= t <= self.steps:
                raise InputError(f"`steps` must lie in [0, {self.steps}]; got {t}.")
            out[t] = float(current[max(t, 1) - 1])
        return out

    # ------------------------------------------------------------------ inputs
    def extreme_inputs(self, generator: Any) -> np.ndarray:
        """Re-render the most extreme input found for every instance (images are not stored)."""
        from fitaudit.data.generators import generate_checked

        return generate_checked(generator, self.instances, self.extreme_factors)

    def space(self) -> FactorSpace:
        """The examined factor space."""
        return FactorSpace.from_dict(self.factor_space)

    # ------------------------------------------------------------------- files
    def to_dict(self, *, include_queries: bool = True) -> dict[str, Any]:
        """JSON-safe dict; ``include_queries=False`` leaves out the (large) query logs."""
        data = super().to_dict()
        if not include_queries:
            data["queries"] = {}
            data["reference_queries"] = {}
        return data

    def save_queries(self, path: str | os.PathLike[str]) -> Path:
        """Write both query logs to ``path`` (.npz; reference columns prefixed ``reference_``)."""
        target = Path(path)
        if target.suffix != ".npz":
            raise InputError(f"`path` must end in .npz; got {str(target)!r}.")
        arrays = {**self.queries, **{f"reference_{k}": v for k, v in self.reference_queries.items()}}
        return atomic_save_npz(target, arrays)

    def _summary_fields(self) -> list[str]:
        return ["examiner", "loss", "maximize", "steps", "queries_per_step", "n_model_queries"]

    def __repr__(self) -> str:
        head = super().__repr__()
        direction = "worst" if self.maximize else "best"
        lines = [
            head,
            f"  instances: {len(self.instances)}; mean true-class probability at T={self.steps}: "
            f"{self.mean_final_true_class_probability:.4f} (E_examiner = {self.e_examiner:.4f}); "
            f"{direction} case found: {self.mean_extreme_true_class_probability:.4f}",
        ]
        if self.weakness is not None and getattr(self.weakness, "rules", None):
            lines.append("  weakness rules: " + "; ".join(r["text"] for r in self.weakness.rules[:3]))
        return "\n".join(lines)

    def verdict(self, **context: Any) -> Verdict:
        """The decision on the worst case with ``tolerance`` (:func:`fitaudit.examine.decision.examination_verdict`)."""
        return examination_verdict(self, **context)

    def contradiction(self) -> str | None:
        """Where a saved copy disagrees with its evidence (:func:`fitaudit.examine.decision.examination_contradiction`)."""
        return examination_contradiction(self)


def _table(
    factors: np.ndarray, loss: np.ndarray, predicted: np.ndarray, true_prob: np.ndarray,
    instances: np.ndarray, labels: np.ndarray, names: list[str], first_step: int,
) -> dict[str, np.ndarray]:
    """Rows (instance, step, query) of arrays shaped (N, T, q[, C])."""
    n, t, q = loss.shape
    grid_i, grid_t, grid_q = np.meshgrid(np.arange(n), np.arange(t), np.arange(q), indexing="ij")
    table = {
        "instance": instances[grid_i].ravel(),
        "label": labels[grid_i].ravel(),
        "step": (grid_t + first_step).ravel().astype(np.int64),
        "query": grid_q.ravel().astype(np.int64),
    }
    flat = factors.reshape(-1, len(names))
    table.update({name: flat[:, c] for c, name in enumerate(names)})
    table.update({"loss": loss.ravel(), "predicted": predicted.ravel(), "true_class_probability": true_prob.ravel()})
    return table


def summarise_logs(
    logs: dict[str, np.ndarray],
    *,
    instances: np.ndarray,
    labels: np.ndarray,
    space: FactorSpace,
    loss: str,
    maximize: bool,
    examiner: str,
    examiner_settings: dict[str, Any],
    generator: dict[str, Any],
    class_names: list[str] | None,
    random_state: int,
    seeds: list[int],
    chunk_size: int,
) -> ExaminationResult:
    """An :class:`ExaminationResult` from the query logs ``(T, N, q[, C])`` of an examination."""
    factors = np.moveaxis(logs["factors"], 0, 1)  # (N, T, q, C)
    losses = np.moveaxis(logs["loss"], 0, 1)
    predicted = np.moveaxis(logs["predicted"], 0, 1)
    true_prob = np.moveaxis(logs["true_class_probability"], 0, 1)
    n, steps, q = losses.shape
    step_loss = losses.mean(axis=2)
    step_prob = true_prob.mean(axis=2)
    if maximize:
        running_loss = np.maximum.accumulate(losses.max(axis=2), axis=1)
        running_prob = np.minimum.accumulate(true_prob.min(axis=2), axis=1)
        flat_best = np.argmax(losses.reshape(n, -1), axis=1)
    else:
        running_loss = np.minimum.accumulate(losses.min(axis=2), axis=1)
        running_prob = np.maximum.accumulate(true_prob.max(axis=2), axis=1)
        flat_best = np.argmin(losses.reshape(n, -1), axis=1)
    rows = np.arange(n)
    names = space.names
    reference = {k[len("reference_"):]: v for k, v in logs.items() if k.startswith("reference_")}
    r = reference["loss"].shape[1]
    return ExaminationResult(
        examiner=examiner,
        examiner_settings=to_jsonable(examiner_settings),
        loss=loss,
        maximize=maximize,
        steps=steps,
        queries_per_step=q,
        n_model_queries=n * steps * q,
        n_reference_queries=n * r,
        factor_names=names,
        factor_space=space.to_dict(),
        generator=to_jsonable(generator),
        class_names=list(class_names) if class_names is not None else None,
        instances=instances,
        labels=labels,
        final_loss=step_loss[:, -1],
        worst_loss=losses.reshape(n, -1).max(axis=1),
        best_loss=losses.reshape(n, -1).min(axis=1),
        final_true_class_probability=step_prob[:, -1],
        min_true_class_probability=true_prob.reshape(n, -1).min(axis=1),
        max_true_class_probability=true_prob.reshape(n, -1).max(axis=1),
        extreme_factors=factors.reshape(n, -1, len(names))[rows, flat_best],
        extreme_step=flat_best // q + 1,
        curves={
            "loss": {"current": step_loss, "running": running_loss},
            "true_class_probability": {"current": step_prob, "running": running_prob},
        },
        random_state=random_state,
        seeds=list(seeds),
        chunk_size=chunk_size,
        queries=_table(factors, losses, predicted, true_prob, instances, labels, names, 1),
        reference_queries=_table(
            reference["factors"][:, None], reference["loss"][:, None], reference["predicted"][:, None],
            reference["true_class_probability"][:, None], instances, labels, names, 0,
        ),
    )


def load_queries(path: str | os.PathLike[str]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(queries, reference queries) from a file written by :meth:`ExaminationResult.save_queries`."""
    target = Path(path)
    if not target.is_file():
        raise InputError(f"`path` {str(target)!r} is not a file.")
    with np.load(target, allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    queries = {k: v for k, v in arrays.items() if not k.startswith("reference_")}
    reference = {k[len("reference_"):]: v for k, v in arrays.items() if k.startswith("reference_")}
    return queries, reference
