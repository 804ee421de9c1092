"""GP-UCB Bayesian optimisation: the BO examiner of Shu et al. (AAAI 2020).

The paper (docs/examiner.md#the-bo-examiner) examines with the fmfn
``bayesian-optimization`` package: a Gaussian process with a Matern 5/2
kernel on continuous factors, the upper confidence bound
``UCB(s) = mu(s) + kappa sigma(s)`` with ``kappa = 2.576`` as acquisition,
and 2 random points before the first model-based proposal. This module
keeps that model and acquisition and rewrites the machinery for speed:

* factors are searched in the unit cube (:meth:`FactorSpace.to_unit`), so
  one length scale suits factors of very different units;
* targets are standardised (scikit-learn's ``normalize_y``, as the package);
* every instance's GP lives in one :class:`~fitaudit.examine._gp.BatchedGP`
  and all instances advance together as batched numpy operations;
* the inverse Cholesky factor is extended by one row per observation
  (O(t^2)) instead of refactorised (O(t^3)) and the hyperparameters refitted
  at every step, as the package does;
* the hyperparameters (length scale and noise variance) are refitted by
  maximising the log marginal likelihood over a fixed grid, the length
  scale then refined by ``lengthscale_refine`` golden-section steps between
  the grid's neighbours (so it lands on the continuous maximum-likelihood
  estimate, as the package's), at every step while ``t < 20`` and then
  every ``refit_every`` steps (the package refits one length scale with
  L-BFGS and 5 restarts at every step and keeps the noise at 1e-6; a grid
  plus a bracketed search is batched, deterministic and cheap, and a fitted
  noise lets the GP smooth losses such as the 0-1 loss);
* the acquisition is maximised by a batched sweep over ``n_candidates``
  uniform points plus ``n_local`` Gaussian perturbations of the 5 best
  observed points, then ``n_refine`` steps of monotone normalised gradient
  ascent (analytic gradient of UCB, step grown after a success and halved
  after a failure) from the ``n_starts`` best candidates (the package uses
  10,000 random points and L-BFGS-B from 10 of them, one at a time).
  The local candidates make the late queries exploit: on the 36 toy
  instances of ``benchmarks/bench_examiner_bo.py`` the mean probability of
  the step-200 query (the paper's E_examiner) is 0.046 with them and 0.150
  without, while the worst case found over 5 seeds is the same within noise
  (0.0437 and 0.0431; see ``benchmarks/results/examiner_bo.txt``).

Periodic factors (angles) wrap around during the perturbation and the
refinement; the kernel itself is Euclidean in the unit cube.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit._validation import check_float, check_int
from fitaudit.examine._gp import BatchedGP
from fitaudit.examine.base import Examiner
from fitaudit.examine.random import instance_streams

#: grid of the length-scale search (unit-cube distances)
LENGTHSCALE_GRID = np.geomspace(0.03, 10.0, 12)
#: grid of the noise-variance search (standardised targets)
NOISE_GRID = np.array([1e-6, 1e-3, 1e-2, 1e-1])
#: number of best observations the local candidates perturb
N_INCUMBENTS = 5
#: refit at every step while fewer observations than this
_ALWAYS_REFIT_BELOW = 20


class BOExaminer(Examiner):
    """Gaussian-process upper-confidence-bound search, batched over instances.

    Parameters
    ----------
    random_state : None, int, SeedSequence or Generator
        Random stream (initial points, candidates); the same seed and the
        same losses give the same proposals.
    kappa : float, default 2.576
        Exploration weight of ``UCB = mu + kappa * sigma`` (the package's
        default, used by the paper).
    n_initial : int, default 2
        Uniformly random proposals before the first GP-based one (the paper).
    refit_every : int, default 10
        Steps between hyperparameter refits once 20 points are observed.
    n_candidates, n_local : int, default 512 and 128
        Uniform and local (around the incumbents) candidates of the sweep.
    n_starts, n_refine : int, default 5 and 10
        Starting points and steps of the gradient refinement.
    lengthscale_refine : int, default 8
        Golden-section steps refining the length scale after the grid
        search (0: the grid's value).

    Notes
    -----
    One proposal per instance and step (``queries_per_step = 1``). Each
    instance has its own random stream, so instance ``i`` proposes the same
    factors whether it is examined alone or among others.
    """

    name: ClassVar[str] = "bo"

    def __init__(
        self,
        *,
        random_state: Any = None,
        kappa: float = 2.576,
        n_initial: int = 2,
        refit_every: int = 10,
        n_candidates: int = 512,
        n_local: int = 128,
        n_starts: int = 5,
        n_refine: int = 10,
        lengthscale_refine: int = 8,
    ) -> None:
        super().__init__(random_state=random_state)
        self.kappa = check_float(kappa, "kappa", low=0.0)
        self.n_initial = check_int(n_initial, "n_initial", minimum=1)
        self.refit_every = check_int(refit_every, "refit_every", minimum=1)
        self.n_candidates = check_int(n_candidates, "n_candidates", minimum=1)
        self.n_local = check_int(n_local, "n_local", minimum=0)
        self.n_starts = check_int(n_starts, "n_starts", minimum=1)
        self.n_refine = check_int(n_refine, "n_refine", minimum=0)
        self.lengthscale_refine = check_int(lengthscale_refine, "lengthscale_refine", minimum=0)

    def _start(self) -> None:
        self._streams = instance_streams(self.rng_, self.n_instances_)
        self.gp_ = BatchedGP(self.n_instances_, len(self.space_))
        self._periodic = np.array([f.periodic for f in self.space_.factors])

    def _ask(self) -> np.ndarray:
        if self.gp_.t < self.n_initial:
            unit = np.stack([rng.random((1, len(self.space_))) for rng in self._streams])
        else:
            unit = self._maximise_ucb()[:, None, :]
        return self.space_.from_unit(unit.reshape(-1, len(self.space_))).reshape(unit.shape)

    def _tell(self, factors: np.ndarray, losses: np.ndarray) -> None:
        unit = self.space_.to_unit(factors.reshape(-1, len(self.space_)))
        self.gp_.add(unit.reshape(self.n_instances_, -1), losses[:, 0])
        t = self.gp_.t
        if t >= 2 and (t < _ALWAYS_REFIT_BELOW or t % self.refit_every == 0):
            self.gp_.fit_hyper(LENGTHSCALE_GRID, NOISE_GRID, refine_steps=self.lengthscale_refine)

    def _project(self, unit: np.ndarray) -> np.ndarray:
        """Wrap periodic coordinates, clip the others to [0, 1]."""
        return np.where(self._periodic, np.mod(unit, 1.0), np.clip(unit, 0.0, 1.0))

    def _candidates(self) -> np.ndarray:
        """Uniform and local candidates, ``(n, n_candidates + n_local, d)``."""
        gp, d = self.gp_, len(self.space_)
        k = min(N_INCUMBENTS, gp.t)
        best = np.argsort(-gp.y, axis=1, kind="stable")[:, :k]
        centres = np.take_along_axis(gp.x, best[:, :, None], axis=1)  # (n, k, d)
        per = -(-self.n_local // k) if self.n_local else 0
        scale = np.minimum(0.2 * gp.lengthscale, 0.1)
        out = []
        for i, rng in enumerate(self._streams):
            uniform = rng.random((self.n_candidates, d))
            noise = rng.normal(0.0, scale[i], (k, per, d))
            local = (centres[i][:, None, :] + noise).reshape(-1, d)[: self.n_local]
            out.append(np.concatenate([uniform, local]))
        return self._project(np.stack(out))

    def _maximise_ucb(self) -> np.ndarray:
        """The (approximate) maximiser of UCB per instance, ``(n, d)`` in the unit cube."""
        gp = self.gp_
        candidates = self._candidates()
        mu, sd = gp.posterior(candidates, standardised=True)
        ucb = mu + self.kappa * sd
        s = min(self.n_starts, candidates.shape[1])
        top = np.argsort(-ucb, axis=1, kind="stable")[:, :s]
        x = np.take_along_axis(candidates, top[:, :, None], axis=1)
        value, grad = gp.ucb_and_grad(x, self.kappa)
        step = np.broadcast_to(0.1 * np.minimum(gp.lengthscale, 1.0)[:, None], value.shape).copy()
        for _ in range(self.n_refine):
            norm = np.linalg.norm(grad, axis=-1, keepdims=True)
            direction = np.divide(grad, norm, out=np.zeros_like(grad), where=norm > 0)
            trial = self._project(x + step[..., None] * direction)
            new_value, new_grad = gp.ucb_and_grad(trial, self.kappa)
            better = new_value > value
            x = np.where(better[..., None], trial, x)
            grad = np.where(better[..., None], new_grad, grad)
            value = np.where(better, new_value, value)
            step = np.where(better, 1.5 * step, 0.5 * step)
        winner = np.argmax(value, axis=1)
        return np.take_along_axis(x, winner[:, None, None], axis=1)[:, 0, :]
