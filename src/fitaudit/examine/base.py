"""The ask/tell base of every examiner (search strategy).

An examiner (Shu, Liu, Qiu, Yuille, AAAI 2020, Algorithm 1;
docs/examiner.md#algorithm-1) proposes nuisance factors s_t for an instance, hears the loss
l_t = L(f(g(z, s_t)), y(z)) and proposes again. fitaudit examines many
instances together: one examiner object holds an independent search state
per instance and, at every step, proposes ``queries_per_step`` factor
vectors for every instance at once, so that the examination loop renders
and classifies one batch per step.

The search space is a :class:`~fitaudit.data.factors.FactorSpace` handed
over by :meth:`Examiner.start`; it is not the strategy's business (as in
Optuna, where distributions are separate from samplers).

Contract (checked for every examiner by one contract test):

* keyword-only constructor with ``random_state`` and the strategy's settings; it
  stores them and does nothing else;
* :meth:`start` (space, number of instances) resets every search state;
* :meth:`ask` returns factors ``(n_instances, queries_per_step, n_factors)``
  inside the space;
* :meth:`tell` takes those factors and the losses ``(n_instances,
  queries_per_step)`` and learns; the examiner always *maximises* the loss
  (the examination negates it to look for strength instead of weakness);
* deterministic: the same ``random_state`` and the same sequence of ``tell`` calls give
  the same ``ask`` answers, so a killed examination resumes by replaying
  its query log through :meth:`ask`/:meth:`tell` without calling the model.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import check_int
from fitaudit.data.factors import FactorSpace
from fitaudit.random import check_random_state


class Examiner(abc.ABC):
    """Base class: one search state per instance, ask/tell in batches.

    Subclasses implement :meth:`_ask` and :meth:`_tell`; :meth:`_start`
    (per-run initialisation) defaults to nothing.

    Attributes
    ----------
    name : str
        Short name used by the CLI and in reports.
    queries_per_step : int
        Factor vectors proposed per instance at every step.
    space_ : FactorSpace
        The space being searched (after :meth:`start`).
    n_instances_ : int
    rng_ : numpy.random.Generator
        The examiner's random stream, reset by :meth:`start`.
    """

    name: ClassVar[str] = "examiner"
    queries_per_step: int = 1

    def __init__(self, *, random_state: Any = None) -> None:
        self.random_state = random_state

    def start(self, space: FactorSpace, n_instances: int) -> None:
        """Forget everything; search ``space`` for ``n_instances`` instances."""
        if not isinstance(space, FactorSpace):
            raise InputError(f"`space` must be a FactorSpace; got {type(space).__name__}.")
        self.space_ = space
        self.n_instances_ = check_int(n_instances, "n_instances", minimum=1)
        self.rng_ = check_random_state(self.random_state)
        self._start()

    def ask(self) -> np.ndarray:
        """Factors to try next, shape ``(n_instances, queries_per_step, n_factors)``."""
        self._check_started()
        factors = np.asarray(self._ask(), dtype=float)
        expected = (self.n_instances_, self.queries_per_step, len(self.space_))
        if factors.shape != expected:
            raise RuntimeError(f"{type(self).__name__}._ask returned shape {factors.shape}, not {expected}.")
        return np.clip(factors, self.space_.lows, self.space_.highs)

    def tell(self, factors: Any, losses: Any) -> None:
        """Learn from the losses ``(n_instances, queries_per_step)`` of ``factors`` (to be maximised)."""
        self._check_started()
        values = np.asarray(factors, dtype=float)
        loss = np.asarray(losses, dtype=float)
        expected = (self.n_instances_, self.queries_per_step)
        if values.shape != (*expected, len(self.space_)):
            raise InputError(f"`factors` must have shape {(*expected, len(self.space_))}; got {values.shape}.")
        if loss.shape != expected:
            raise InputError(f"`losses` must have shape {expected}; got {loss.shape}.")
        if not np.all(np.isfinite(loss)):
            raise InputError("`losses` must be finite; got NaN or infinity.")
        flat = self.space_.validate(values.reshape(-1, len(self.space_)), "factors")
        values = flat.reshape(values.shape)
        self._tell(values, loss)

    def settings(self) -> dict[str, Any]:
        """The constructor's arguments (JSON-safe): they key checkpoints and appear in reports."""
        return {k: v for k, v in vars(self).items() if not k.endswith("_") and not k.startswith("_")}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.settings().items())
        return f"{type(self).__name__}({args})"

    def _check_started(self) -> None:
        if not hasattr(self, "space_"):
            raise InputError(f"call {type(self).__name__}.start(space, n_instances) before ask/tell.")

    def _start(self) -> None:  # noqa: B027 -- an optional hook, a no-op by default
        """Hook: set up per-instance state after :meth:`start`."""

    @abc.abstractmethod
    def _ask(self) -> np.ndarray:
        """Proposals ``(n_instances, queries_per_step, n_factors)``."""

    @abc.abstractmethod
    def _tell(self, factors: np.ndarray, losses: np.ndarray) -> None:
        """Learn from validated ``factors`` and ``losses``."""
