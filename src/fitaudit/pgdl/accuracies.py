"""The accuracies a PGDL task or an imported population records for each model (train_acc, test_acc).

Shared by the task reader (:mod:`fitaudit.pgdl.task`) and the population
importer (:mod:`fitaudit.pgdl.population`), which both check them.
"""

from __future__ import annotations

from typing import Any

from fitaudit._errors import InputError

#: the metrics of a task's models that are accuracies (fractions in [0, 1])
ACCURACY_METRICS = ("train_acc", "test_acc")


def check_accuracies(metrics: dict[str, Any], where: str) -> None:
    """Refuse a ``train_acc`` or ``test_acc`` that is not a number in [0, 1] (5.0 would give a gap of 4)."""
    for name in ACCURACY_METRICS:
        if name not in metrics:
            continue
        value = metrics[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise InputError(f"{where}: {name} must be an accuracy, a number in [0, 1]; got {value!r}.")
