"""The ``bayesian-optimization`` package (the paper's BO) as a fitaudit examiner: the benchmarks' baseline.

One ``BayesianOptimization`` per instance, with the package's defaults
(Matern 5/2 GP, ``alpha=1e-6``, ``normalize_y``, UCB with kappa 2.576),
searching the unit cube of the examined factors (its best case: one length
scale suits every factor; the paper gave it the raw ranges). The first
``n_initial`` queries are uniform, as for :class:`fitaudit.examine.bo.BOExaminer`;
then ``suggest`` and ``register``, one instance at a time. Kept in its own
module so that an examination's checkpoint key (which fingerprints the
examiner's module) changes only when this code does.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from fitaudit.examine.base import Examiner
from fitaudit.examine.random import instance_streams


def package_optimizer(seed: int, n_factors: int):
    """The package's optimiser with its defaults over ``[0, 1]^n_factors`` (factors named ``f0``, ``f1``, ...)."""
    from bayes_opt import BayesianOptimization

    bounds = {f"f{j}": (0.0, 1.0) for j in range(n_factors)}
    return BayesianOptimization(f=None, pbounds=bounds, random_state=seed, verbose=0, allow_duplicate_points=True)


class PackageExaminer(Examiner):
    """GP-UCB by the ``bayesian-optimization`` package, one optimiser per instance."""

    name: ClassVar[str] = "bayesian-optimization"

    def __init__(self, *, random_state=None, n_initial: int = 2) -> None:
        super().__init__(random_state=random_state)
        self.n_initial = n_initial

    def _start(self) -> None:
        self._streams = instance_streams(self.rng_, self.n_instances_)
        self._keys = [f"f{j}" for j in range(len(self.space_))]
        self._optimisers = [package_optimizer(int(rng.integers(2**31 - 1)), len(self.space_)) for rng in self._streams]
        self._told = 0

    def _ask(self) -> np.ndarray:
        d = len(self.space_)
        if self._told < self.n_initial:
            unit = np.stack([rng.random(d) for rng in self._streams])
        else:
            unit = np.clip([[opt.suggest()[k] for k in self._keys] for opt in self._optimisers], 0.0, 1.0)
        return self.space_.from_unit(unit)[:, None, :]

    def _tell(self, factors: np.ndarray, losses: np.ndarray) -> None:
        unit = self.space_.to_unit(factors[:, 0, :])
        for opt, row, loss in zip(self._optimisers, unit, losses[:, 0]):
            opt.register(params=dict(zip(self._keys, map(float, row))), target=float(loss))
        self._told += 1
