"""A toy world for the examination tests: three factors, four instances, a planted failure region.

The classifier is right everywhere except where ``a > 0.8 and b < 0.5``
(it then scores another class highest); elsewhere its true-class logit
falls slowly with ``a``, so a searching examiner has a gradient to follow.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.data.factors import Factor, FactorSpace
from fitaudit.examine.base import Examiner

SPACE = FactorSpace(
    [Factor("a", 0.0, 1.0, 0.5, "u"), Factor("b", 0.0, 1.0, 0.5, "u"), Factor("c", -1.0, 1.0, 0.0, "u")]
)
LABELS = np.array([0, 1, 2, 0])
N_CLASSES = 3


def render(instances: np.ndarray, factors: np.ndarray) -> np.ndarray:
    """Input rows ``[a, b, c, instance]``."""
    return np.column_stack([factors, np.asarray(instances, dtype=float)])


def true_logit(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where((a > 0.8) & (b < 0.5), -2.0, 3.0 - 2.0 * a)


def classify(x: np.ndarray) -> np.ndarray:
    """Logits ``(n, 3)``: the true class gets :func:`true_logit`, the others 0."""
    x = np.asarray(x, dtype=float)
    labels = LABELS[x[:, 3].astype(int)]
    out = np.zeros((len(x), N_CLASSES))
    out[np.arange(len(x)), labels] = true_logit(x[:, 0], x[:, 1])
    return out


def expected_true_probability(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Softmax probability of the true class (two other logits at 0)."""
    z = np.exp(true_logit(a, b))
    return z / (z + 2.0)


class CountingGenerator:
    """The toy generator, counting its calls; raises after ``fail_after`` calls when set."""

    def __init__(self, fail_after: int | None = None) -> None:
        self.factor_space = SPACE
        self.labels = LABELS
        self.class_names = ["zero", "one", "two"]
        self.calls = 0
        self.fail_after = fail_after

    def generate(self, instances: np.ndarray, factors: np.ndarray) -> np.ndarray:
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise RuntimeError("injected failure")
        return render(instances, factors)

    def describe(self) -> dict[str, Any]:
        return {"generator": "toy", "labels": LABELS.tolist(), "factor_space": SPACE.to_dict()}


class HillClimber(Examiner):
    """A tiny examiner: per instance, perturb the best point so far (Gaussian steps in the unit cube)."""

    name: ClassVar[str] = "hill"

    def __init__(self, *, random_state: Any = None, step: float = 0.2) -> None:
        super().__init__(random_state=random_state)
        self.step = step

    def _start(self) -> None:
        self._best = self.rng_.random((self.n_instances_, len(self.space_)))
        self._best_loss = np.full(self.n_instances_, -np.inf)
        self.told_: list[np.ndarray] = []

    def _ask(self) -> np.ndarray:
        u = np.clip(self._best + self.step * self.rng_.standard_normal(self._best.shape), 0.0, 1.0)
        return self.space_.from_unit(u)[:, None, :]

    def _tell(self, factors: np.ndarray, losses: np.ndarray) -> None:
        self.told_.append(losses.copy())
        better = losses[:, 0] > self._best_loss
        if not better.any():
            return
        self._best[better] = self.space_.to_unit(factors[better, 0])
        self._best_loss[better] = losses[better, 0]


#: losses told to every RecordingExaminer (in this process)
TOLD: list[np.ndarray] = []


class RecordingExaminer(HillClimber):
    """A :class:`HillClimber` that also appends every loss array it is told to :data:`TOLD`."""

    name: ClassVar[str] = "recording"

    def _tell(self, factors: np.ndarray, losses: np.ndarray) -> None:
        TOLD.append(losses.copy())
        super()._tell(factors, losses)
