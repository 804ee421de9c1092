"""What the PGDL harness reads of a population of trained models: :class:`PopulationLike`.

Two classes implement it: :class:`fitaudit.pgdl.task.PGDLTask` (a task folder
in the competition's format, Jiang et al. 2020) and
:class:`fitaudit.pgdl.population.Population` (a user's own models,
``fitaudit pgdl import``). :func:`fitaudit.pgdl.harness.score_task`,
:func:`fitaudit.pgdl.leaderboard.leaderboard` and
:func:`~fitaudit.pgdl.leaderboard.rank_models` accept anything that does.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from fitaudit._errors import InputError


@runtime_checkable
class PopulationLike(Protocol):
    """A population of trained models over one training set.

    Attributes
    ----------
    directory : Path
        Where it is stored (named in messages and fingerprints).
    model_ids : list of str
        The models, in order.
    configs : dict
        ``model_configs.json``'s structure: id -> ``{"hparams": {name:
        {"current_value", "possible_values"}}, "metrics": {...}}``.
    formats : dict
        Model id -> the format its measures read (``"torch"`` or ``"onnx"``).
    """

    directory: Path
    model_ids: list[str]
    configs: dict[str, Any]
    formats: dict[str, str]

    def model_dir(self, model_id: str) -> Path:
        """The model's file or folder."""

    def model(self, model_id: str, initial: bool = False) -> Any:
        """The trained (or initial) network as a torch module in eval mode."""

    def has_initial(self, model_id: str) -> bool:
        """Whether the model's weights at initialisation are stored."""

    def train_data(self) -> tuple[np.ndarray, np.ndarray]:
        """Training inputs (channels first) and labels."""

    def hparams(self, model_id: str) -> dict[str, Any]:
        """Hyperparameter name -> the model's value."""

    def metrics(self, model_id: str) -> dict[str, float]:
        """The model's ``train_acc`` and ``test_acc``."""


def check_formats(population: PopulationLike, measures: Sequence[Any]) -> None:
    """Refuse measures that cannot read a format in the population (an error naming the measure and its formats)."""
    present = sorted(set(population.formats.values()))
    for measure in measures:
        for fmt in present:
            if fmt not in measure.formats:
                example = next(i for i, f in population.formats.items() if f == fmt)
                raise InputError(
                    f"measure {measure.name!r} takes {' or '.join(measure.formats)} models; model "
                    f"{example!r} of {str(population.directory)!r} is {fmt} "
                    f"(see the formats column of `fitaudit measures list`)."
                )
