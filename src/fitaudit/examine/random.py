"""Random search: the baseline every examiner is compared with.

Shu, Liu, Qiu, Yuille (AAAI 2020; docs/examiner.md#how-it-works) compare their
learned examiners with factors drawn uniformly at random from the space S;
the mean loss of random queries is also the "T = 0" reference of their
tables (the model's average-case performance over S).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit._validation import check_int
from fitaudit.examine.base import Examiner


class RandomExaminer(Examiner):
    """Uniform random search over the factor space, independent of the losses.

    Parameters
    ----------
    random_state : None, int, SeedSequence or Generator
        Random stream; the same seed gives the same queries.
    queries_per_step : int, default 1
        Factor vectors drawn per instance at every step.

    Notes
    -----
    Every instance has its own stream (derived from ``random_state``), so instance
    ``i``'s queries do not depend on how many instances are examined
    together. :meth:`tell` learns nothing; it only checks its arguments.
    """

    name: ClassVar[str] = "random"

    def __init__(self, *, random_state: Any = None, queries_per_step: int = 1) -> None:
        super().__init__(random_state=random_state)
        self.queries_per_step = check_int(queries_per_step, "queries_per_step", minimum=1)

    def _start(self) -> None:
        self._streams = instance_streams(self.rng_, self.n_instances_)

    def _ask(self) -> np.ndarray:
        lows, highs = self.space_.lows, self.space_.highs
        shape = (self.queries_per_step, len(self.space_))
        return np.stack([lows + (highs - lows) * rng.random(shape) for rng in self._streams])

    def _tell(self, factors: np.ndarray, losses: np.ndarray) -> None:
        """Nothing to learn."""


def instance_streams(rng: np.random.Generator, n_instances: int) -> list[np.random.Generator]:
    """One independent generator per instance, derived from ``rng``.

    Instance ``i``'s stream is the same whatever ``n_instances`` is (the
    child seeds are drawn in order), so examining a subset of instances
    reproduces their queries.
    """
    seeds = rng.integers(0, 2**63 - 1, size=n_instances, dtype=np.int64)
    return [np.random.default_rng(int(s)) for s in seeds]
