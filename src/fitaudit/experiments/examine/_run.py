"""The result type of the examiner reproductions, their options and run, and the examination they all run."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fitaudit.experiments.base import ParallelOptions, Run
from fitaudit.experiments.examine._common import choose_instances, fixed_factors
from fitaudit.experiments.examine._models import reference_model
from fitaudit.results import Result

if TYPE_CHECKING:
    from typing import Unpack

#: instances examined together (one chunk, one process when ``n_jobs`` > 1)
CHUNK_SIZE = 3


@dataclasses.dataclass(repr=False)
class ExaminerReproduction(Result):
    """Numbers of one examiner reproduction (``fitaudit reproduce examiner-...``).

    Attributes
    ----------
    experiment : str
    mode : {"quick", "full"}
    rows : list of dict
        One per examination (model, examiner, instance set, ...): the mean
        true-class probability at the reported steps (``at_steps``: step ->
        value; step 0 is the first query, before any update), the worst case
        found, the model queries, and the paper's number where it has one.
    curves : dict
        Row label -> mean true-class probability per step (the figure).
    models : dict
        Training summary of every reference model used.
    settings : dict
        Steps, instances, examined factors, fixed factors, image size.
    findings : list of str
        Sentences for people, with the numbers behind them.
    seconds : float
        Wall time of this call (less when resumed from checkpoints).
    embedding : QueryEmbedding or None
        t-SNE of random vs examiner-found inputs (the planted weakness).
    """

    experiment: str
    mode: str
    rows: list[dict[str, Any]]
    curves: dict[str, Any]
    models: dict[str, Any]
    settings: dict[str, Any]
    findings: list[str]
    seconds: float
    embedding: Any = None

    def _summary_fields(self) -> list[str]:
        return ["experiment", "mode", "seconds"]

    def __repr__(self) -> str:
        return "\n".join([super().__repr__(), *(f"  {f}" for f in self.findings)])


def models_folder(models_dir: str | os.PathLike[str] | None, checkpoint_dir: str | os.PathLike[str] | None) -> Path:
    """Where reference models are cached: ``models_dir``, else ``checkpoint_dir/models``, else fitaudit-out."""
    if models_dir is not None:
        return Path(models_dir)
    if checkpoint_dir is not None:
        return Path(checkpoint_dir) / "models"
    return Path("fitaudit-out") / "examiner-models"


def load_scenario(settings: dict[str, Any], models: Path, *, seed: int, progress: bool, n_per_class: int,
                  n_random: int, device: str = "cpu") -> tuple[Any, Any, dict[str, Any], dict[str, list[int]]]:
    """(classifier on ``device``, generator over validation objects, training summary, chosen instances)."""
    from fitaudit.data.shapes import ShapesGenerator
    from fitaudit.models import as_classifier

    module, summary = reference_model(settings, models, seed=seed, progress=progress, device=device)
    model = as_classifier(module, batch_size=1024, device=device)
    generator = ShapesGenerator(n_per_class, classes=settings["classes"], image_size=settings["image_size"])
    chosen = choose_instances(model, generator, n_views=8, n_random=n_random, random_state=seed)
    return model, generator, summary, chosen


def run_examination(model: Any, generator: Any, instances: list[int], *, examiner: str, steps: int, seed: int,
                    checkpoint_dir: Path | None, progress: bool, options: dict[str, Any] | None = None,
                    maximize: bool = True, n_reference: int = 32, weakness: bool = False,
                    n_jobs: int | None = None, device: str = "cpu") -> Any:
    """One examination over the paper's nine factors (the sun's direction fixed at random), the model on ``device``.

    Instances are examined in fixed chunks of :data:`CHUNK_SIZE` (so the
    numbers do not depend on ``n_jobs``), spread over ``n_jobs`` processes.
    """
    from fitaudit.examine import examine

    return examine(
        model, generator, examiner=examiner, examiner_options=options, steps=steps, instances=instances,
        ranges=fixed_factors(seed), maximize=maximize, random_state=seed, chunk_size=CHUNK_SIZE, n_jobs=n_jobs,
        n_reference=n_reference, weakness=weakness, checkpoint_dir=checkpoint_dir, progress=progress, device=device,
    )


def row(result: Any, label: str, report_steps: list[int], rows: np.ndarray | None = None, **extra: Any) -> dict[str, Any]:
    """A table row: mean true-class probability at the steps, worst found, queries (over ``rows`` instances)."""
    keep = np.arange(len(result.instances)) if rows is None else rows
    current = mean_curve(result, keep)
    return {
        "label": label,
        "examiner": result.examiner,
        "n_instances": int(len(keep)),
        "steps": result.steps,
        "queries_per_step": result.queries_per_step,
        "model_queries": int(result.n_model_queries * len(keep) / len(result.instances)),
        "at_steps": {int(t): float(current[max(t, 1) - 1]) for t in report_steps if t <= result.steps},
        "worst_found": float(result.extreme_true_class_probability[keep].mean()),
        **extra,
    }


def mean_curve(result: Any, rows: np.ndarray | None = None) -> list[float]:
    """Mean true-class probability of the ``rows`` instances (all by default) at every step."""
    keep = np.arange(len(result.instances)) if rows is None else rows
    return result.curve("true_class_probability", "current", by="instance")[keep].mean(axis=0).tolist()


class ExaminerOptions(ParallelOptions, total=False):
    """:class:`~fitaudit.experiments.base.ParallelOptions` (``n_jobs`` spreads each examination's chunks of
    instances over processes), and ``models_dir``: the cache of the reference models, trained on first use
    (default ``checkpoint_dir/models``, else ``fitaudit-out/examiner-models``)."""

    models_dir: str | os.PathLike[str] | None


class ExaminerRun(Run):
    """A :class:`~fitaudit.experiments.base.Run` of an examiner reproduction: its reference models, scenarios
    and examinations, with the run's seed, checkpoints, progress and ``n_jobs``.

    The mode's settings must name ``n_per_class`` (instances per class) and ``steps`` (examination steps).
    """

    def __init__(
        self,
        modes: Mapping[str, Any] | Collection[str],
        *,
        models_dir: str | os.PathLike[str] | None = None,
        **options: Unpack[ParallelOptions],
    ) -> None:
        super().__init__(modes, runs_torch=True, **options)
        self.models = models_folder(models_dir, self.checkpoint_dir)

    def scenario(self, settings: dict[str, Any], *, n_random: int = 0) -> tuple[Any, Any, dict[str, Any], dict[str, list[int]]]:
        """(classifier, generator, training summary, chosen instances) of the reference model ``settings`` describes.

        On one torch thread (given back after), as :meth:`examine`: the numbers depend on the thread count.
        """
        from fitaudit.models.training import torch_threads

        with torch_threads(1):
            return load_scenario(settings, self.models, seed=self.random_state, progress=self.progress,
                             n_per_class=self.settings["n_per_class"], n_random=n_random, device=self.device)

    def examine(self, model: Any, generator: Any, instances: list[int], examiner: str, **extra: Any) -> Any:
        """One examination (:func:`run_examination`) for the mode's steps on one torch thread; ``extra``: its further
        settings."""
        from fitaudit.models.training import torch_threads

        with torch_threads(1):
            return run_examination(model, generator, instances, examiner=examiner, steps=self.settings["steps"],
                                   seed=self.random_state, checkpoint_dir=self.folder("examinations"),
                                   progress=self.progress, n_jobs=self.n_jobs, device=self.device, **extra)
