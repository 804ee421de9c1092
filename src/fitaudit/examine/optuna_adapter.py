"""Any Optuna sampler as an examiner (TPE, CMA-ES, quasi-Monte Carlo, GP).

Optuna (Akiba et al., KDD 2019) separates the search space (its
distributions) from the search strategy (its samplers), as fitaudit
separates the :class:`~fitaudit.data.factors.FactorSpace` from the
:class:`~fitaudit.examine.base.Examiner`. This adapter runs one Optuna study
per instance, in the ask-and-tell interface, with every factor a
``FloatDistribution(low, high)``; the study maximises the loss, as every
examiner does (docs/examiner.md#what-is-measured).

Optuna is optional: ``pip install 'fitaudit[examine]'`` (CMA-ES also needs
the ``cmaes`` package, Optuna's GP sampler needs torch).
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit.examine.base import Examiner
from fitaudit.examine.random import instance_streams

#: sampler name -> (Optuna class name, extra constructor arguments)
SAMPLERS: dict[str, tuple[str, dict[str, Any]]] = {
    "tpe": ("TPESampler", {}),
    "cmaes": ("CmaEsSampler", {}),
    "qmc": ("QMCSampler", {"scramble": True}),
    "gp": ("GPSampler", {}),
    "random": ("RandomSampler", {}),
}


class OptunaExaminer(Examiner):
    """One Optuna study per instance, driven through ask and tell.

    Parameters
    ----------
    sampler : str, optuna sampler or callable, default "tpe"
        A name in :data:`SAMPLERS` (``"tpe"``, ``"cmaes"``, ``"qmc"``,
        ``"gp"``, ``"random"``), built with a seed derived from ``random_state`` for
        every instance; an Optuna sampler object, deep-copied for every
        instance (its own seed makes it deterministic, and every instance
        then starts from the same random state); or a callable
        ``seed -> sampler`` called once per instance with an integer seed.
    random_state : None, int, SeedSequence or Generator
        Seeds the per-instance samplers built by name or by a callable.

    Notes
    -----
    Optuna pairs every ``tell`` with the trial of the preceding ``ask``. When
    :meth:`tell` receives factors other than the ones asked (a query log
    replayed from elsewhere), the asked trial is closed as failed and the
    told factors are added as a completed trial, so the study learns what it
    was told. Optuna's log messages below errors are silenced (a global
    Optuna setting) and its experimental-feature warnings suppressed.
    """

    name: ClassVar[str] = "optuna"

    def __init__(
        self, *, sampler: str | Any | Callable[[int], Any] = "tpe", random_state: Any = None
    ) -> None:
        super().__init__(random_state=random_state)
        if isinstance(sampler, str):
            if sampler not in SAMPLERS:
                raise InputError(f"`sampler` must be one of {', '.join(SAMPLERS)} or a sampler; got {sampler!r}.")
        self.sampler = sampler

    def settings(self) -> dict[str, Any]:
        """Constructor arguments; a sampler object appears as its class name."""
        sampler = self.sampler if isinstance(self.sampler, str) else type(self.sampler).__name__
        return {"sampler": sampler, "random_state": self.random_state}

    def _start(self) -> None:
        optuna = import_optional("optuna", "the Optuna examiner")
        optuna.logging.set_verbosity(optuna.logging.ERROR)
        self._optuna = optuna
        self._distributions = {
            f.name: optuna.distributions.FloatDistribution(f.low, f.high) for f in self.space_.factors
        }
        seeds = [int(r.integers(0, 2**31 - 1)) for r in instance_streams(self.rng_, self.n_instances_)]
        self._studies = [
            optuna.create_study(direction="maximize", sampler=self._make_sampler(s)) for s in seeds
        ]
        self._trials: list[Any] = []

    def _make_sampler(self, seed: int) -> Any:
        if isinstance(self.sampler, str):
            class_name, kwargs = SAMPLERS[self.sampler]
            if self.sampler == "cmaes":
                import_optional("cmaes", "the Optuna CMA-ES examiner")
            if self.sampler == "gp":
                import_optional("torch", "the Optuna GP examiner")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return getattr(self._optuna.samplers, class_name)(seed=seed, **kwargs)
        if isinstance(self.sampler, self._optuna.samplers.BaseSampler):
            return copy.deepcopy(self.sampler)
        if callable(self.sampler):
            sampler = self.sampler(seed)
            if not isinstance(sampler, self._optuna.samplers.BaseSampler):
                raise InputError(
                    f"`sampler` callable must return an Optuna sampler; got {type(sampler).__name__}."
                )
            return sampler
        raise InputError(
            f"`sampler` must be a name, an Optuna sampler or a callable; got {type(self.sampler).__name__}."
        )

    def _ask(self) -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._trials = [study.ask(self._distributions) for study in self._studies]
        names = self.space_.names
        return np.array([[[trial.params[n] for n in names]] for trial in self._trials])

    def _tell(self, factors: np.ndarray, losses: np.ndarray) -> None:
        names = self.space_.names
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i, study in enumerate(self._studies):
                trial = self._trials[i] if i < len(self._trials) else None
                value = float(losses[i, 0])
                asked = None if trial is None else np.array([trial.params[n] for n in names])
                if asked is not None and np.allclose(asked, factors[i, 0], rtol=1e-9, atol=1e-12):
                    study.tell(trial, value)
                    continue
                if trial is not None:
                    study.tell(trial, state=self._optuna.trial.TrialState.FAIL)
                study.add_trial(
                    self._optuna.trial.create_trial(
                        params=dict(zip(names, map(float, factors[i, 0]), strict=True)),
                        distributions=self._distributions,
                        value=value,
                    )
                )
        self._trials = []
