"""Two measures sharing one search per model, which logs every run to a file (seen across worker processes).

In a module of its own (not a test module), so that joblib's worker
processes import the classes by name.
"""

from __future__ import annotations

import os
from typing import ClassVar

from fitaudit.measures import Measure, ModelRecord


class SharedSearchA(Measure):
    """The sum of squared parameters found by a "search" shared through the record's WorkCache."""

    name: ClassVar[str] = "shared_search_a"
    needs_data: ClassVar[bool] = False

    def __init__(self, *, random_state: int = 0, log: str = "") -> None:
        super().__init__(random_state=random_state)
        self.log = log

    def search(self, record: ModelRecord) -> float:
        with open(self.log, "a") as handle:  # one short append per run: whole lines, whatever the process
            handle.write(f"{os.getpid()} {record.model_id}\n")
        return float(sum(float((p.detach().double() ** 2).sum()) for p in record.model.parameters()))

    def compute(self, record: ModelRecord) -> float:
        return record.cache.get_or_compute("shared-search", lambda: self.search(record))


class SharedSearchB(SharedSearchA):
    """The same search, read back (twice the value, so the two measures differ)."""

    name: ClassVar[str] = "shared_search_b"

    def compute(self, record: ModelRecord) -> float:
        return 2 * super().compute(record)


def searched_models(log: str) -> list[str]:
    """The model ids of every search run, in the order logged (empty when none ran)."""
    if not os.path.exists(log):
        return []
    with open(log) as handle:
        return [line.split()[1] for line in handle if line.strip()]
