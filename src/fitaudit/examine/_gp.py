"""Many independent Gaussian processes advanced together (the engine of the BO examiner).

Every instance of an examination has its own GP on the unit cube, and all
instances receive one observation per step, so their data have the same
size ``t`` and every operation is a batched numpy operation over a leading
instance axis.

Model (as the ``bayesian-optimization`` package used by Shu et al., AAAI
2020: scikit-learn's ``GaussianProcessRegressor(kernel=Matern(nu=2.5),
normalize_y=True)``): targets standardised by their mean and standard
deviation, prior variance 1, Matern 5/2 kernel with one length scale
``ell`` (isotropic)

    k(x, x') = (1 + sqrt(5) r + 5 r^2 / 3) exp(-sqrt(5) r),  r = |x - x'| / ell,

and a white-noise variance ``noise`` added to the diagonal (scikit-learn's
``alpha``). The posterior (Rasmussen & Williams 2006, Alg. 2.1) is

    mu(x) = k(x)^T K^-1 y,    var(x) = 1 - k(x)^T K^-1 k(x),   K = k(X, X) + noise I.

Speed: the inverse ``Linv`` of the Cholesky factor of ``K`` is kept and
extended by one row per observation (rank-1 extension, O(t^2)); the full
O(t^3) factorisation is only recomputed when the hyperparameters are
refitted. Then ``var(x) = 1 - |Linv k(x)|^2`` is a matrix product over a
whole batch of candidates.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.linalg

SQRT5 = np.sqrt(5.0)
#: smallest squared pivot accepted in the rank-1 extension (guards round-off)
_MIN_PIVOT = 1e-12


def sq_dists(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances ``(n, p, q)`` between ``a (n, p, d)`` and ``b (n, q, d)``."""
    aa = np.einsum("npd,npd->np", a, a)
    bb = np.einsum("nqd,nqd->nq", b, b)
    d2 = aa[:, :, None] + bb[:, None, :] - 2.0 * np.matmul(a, b.transpose(0, 2, 1))
    return np.maximum(d2, 0.0)


def matern52(a: np.ndarray, b: np.ndarray, lengthscale: np.ndarray) -> np.ndarray:
    """Matern 5/2 kernel ``(n, p, q)``; ``lengthscale`` has shape ``(n,)``."""
    return matern52_of_dist(np.sqrt(sq_dists(a, b)), lengthscale)


def matern52_of_dist(dist: np.ndarray, lengthscale: np.ndarray) -> np.ndarray:
    """Matern 5/2 kernel from Euclidean distances ``(n, p, q)``."""
    r = dist * (SQRT5 / lengthscale[:, None, None])
    return (1.0 + r + r * r / 3.0) * np.exp(-r)


def matern52_grad(x: np.ndarray, data: np.ndarray, lengthscale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Kernel values ``(n, s, t)`` and their gradients in ``x`` ``(n, s, t, d)``.

    ``dk/dx = -(5/3) (1 + sqrt(5) r) exp(-sqrt(5) r) (x - x') / ell^2``.
    """
    diff = x[:, :, None, :] - data[:, None, :, :]
    ell = lengthscale[:, None, None]
    r = np.sqrt(np.einsum("nstd,nstd->nst", diff, diff)) / ell
    decay = np.exp(-SQRT5 * r)
    k = (1.0 + SQRT5 * r + (5.0 / 3.0) * r * r) * decay
    factor = -(5.0 / 3.0) * (1.0 + SQRT5 * r) * decay / (ell * ell)
    return k, factor[..., None] * diff


def _cholesky_inverse(matrix: np.ndarray) -> np.ndarray:
    """Inverse of the lower Cholesky factor of every matrix of a stack ``(n, t, t)``."""
    out = np.empty_like(matrix)
    eye = np.eye(matrix.shape[1])
    for i, k in enumerate(matrix):
        chol = _robust_cholesky(k)
        out[i] = scipy.linalg.solve_triangular(chol, eye, lower=True)
    return out


def _robust_cholesky(matrix: np.ndarray) -> np.ndarray:
    """Lower Cholesky factor, adding diagonal jitter if round-off made ``matrix`` indefinite."""
    jitter = 0.0
    for _ in range(8):
        try:
            return np.linalg.cholesky(matrix + jitter * np.eye(len(matrix)))
        except np.linalg.LinAlgError:
            jitter = 1e-10 if jitter == 0.0 else 10.0 * jitter
    return np.linalg.cholesky(matrix + 1e-2 * np.eye(len(matrix)))


def log_marginal_likelihood(
    dist: np.ndarray, y: np.ndarray, lengthscale: np.ndarray, noise: np.ndarray
) -> np.ndarray:
    """``log p(y | X)`` of standardised targets, one per instance (R&W 2006, eq. 2.30).

    ``dist`` holds the pairwise distances ``(n, t, t)`` of the inputs.
    Instances whose kernel matrix is numerically indefinite get ``-inf``.
    """
    n, t, _ = dist.shape
    k = matern52_of_dist(dist, lengthscale)
    k[:, np.arange(t), np.arange(t)] += noise[:, None]
    out = np.full(n, -np.inf)
    try:
        chols = np.linalg.cholesky(k)
        ok = np.ones(n, dtype=bool)
    except np.linalg.LinAlgError:
        chols = np.zeros_like(k)
        ok = np.zeros(n, dtype=bool)
        for i in range(n):
            try:
                chols[i] = np.linalg.cholesky(k[i])
                ok[i] = True
            except np.linalg.LinAlgError:
                pass
    for j in np.flatnonzero(ok):
        v = scipy.linalg.solve_triangular(chols[j], y[j], lower=True, check_finite=False)
        out[j] = -0.5 * v @ v - np.log(np.diag(chols[j])).sum() - 0.5 * t * np.log(2 * np.pi)
    return out


def _take_better(
    best: np.ndarray, best_value: np.ndarray, point: np.ndarray, value: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Entrywise, ``(point, value)`` where ``value`` beats ``best_value``, else ``(best, best_value)``."""
    better = value > best_value
    return np.where(better, point, best), np.where(better, value, best_value)


def _golden_section_max(
    objective: Callable[[np.ndarray], np.ndarray],
    low: np.ndarray,
    high: np.ndarray,
    start: np.ndarray,
    start_value: np.ndarray,
    steps: int,
) -> np.ndarray:
    """Golden-section search for the maximiser of ``objective`` on ``[low, high]`` per entry.

    ``objective`` maps a vector of points (one per entry) to their values;
    the result is the best point evaluated, ``start`` (valued
    ``start_value``) included, so the search never returns a worse point.
    """
    ratio = (np.sqrt(5.0) - 1.0) / 2.0
    a, b = low, high
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = objective(c), objective(d)
    best, best_value = _take_better(start, start_value, c, fc)
    best, best_value = _take_better(best, best_value, d, fd)
    for _ in range(steps):
        left = fc >= fd  # the maximiser lies in [a, d]: d <- c, new c; else in [c, b]: c <- d, new d
        a, b = np.where(left, a, c), np.where(left, d, b)
        kept, kept_value = np.where(left, c, d), np.where(left, fc, fd)
        fresh = np.where(left, b - ratio * (b - a), a + ratio * (b - a))
        fresh_value = objective(fresh)  # one new evaluation per entry
        best, best_value = _take_better(best, best_value, fresh, fresh_value)
        c, fc = np.where(left, fresh, kept), np.where(left, fresh_value, kept_value)
        d, fd = np.where(left, kept, fresh), np.where(left, kept_value, fresh_value)
    return best


def _matvec(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """Batched matrix-vector product ``(n, p, q) @ (n, q) -> (n, p)``."""
    return np.matmul(matrix, vector[:, :, None])[:, :, 0]


class BatchedGP:
    """``n`` independent GPs on ``[0, 1]^d`` that all grow by one point per :meth:`add`.

    Parameters
    ----------
    n, d : int
        Number of GPs (instances) and of input dimensions.
    lengthscale, noise : float
        Initial hyperparameters (shared starting values; :meth:`set_hyper`
        sets one per GP).
    """

    def __init__(self, n: int, d: int, *, lengthscale: float = 0.5, noise: float = 1e-6) -> None:
        self.n, self.d, self.t = n, d, 0
        self.lengthscale = np.full(n, float(lengthscale))
        self.noise = np.full(n, float(noise))
        cap = 64
        self._x = np.zeros((n, cap, d))
        self._y = np.zeros((n, cap))
        self._linv = np.zeros((n, cap, cap))

    @property
    def x(self) -> np.ndarray:
        """Observed inputs ``(n, t, d)``."""
        return self._x[:, : self.t]

    @property
    def y(self) -> np.ndarray:
        """Observed targets ``(n, t)``, raw (not standardised)."""
        return self._y[:, : self.t]

    @property
    def linv(self) -> np.ndarray:
        """Inverse Cholesky factor ``(n, t, t)`` of ``k(X, X) + noise I``."""
        return self._linv[:, : self.t, : self.t]

    def _grow(self) -> None:
        cap = 2 * self._x.shape[1]
        x, y, linv = self._x, self._y, self._linv
        self._x = np.zeros((self.n, cap, self.d))
        self._y = np.zeros((self.n, cap))
        self._linv = np.zeros((self.n, cap, cap))
        self._x[:, : self.t], self._y[:, : self.t] = x[:, : self.t], y[:, : self.t]
        self._linv[:, : self.t, : self.t] = linv[:, : self.t, : self.t]

    def add(self, x: np.ndarray, y: np.ndarray) -> None:
        """Append one observation per GP: ``x (n, d)``, ``y (n,)``; O(t^2) each.

        With ``K' = [[K, k], [k^T, c]]`` the new Cholesky row is
        ``[l^T, p]`` with ``l = Linv k`` and ``p = sqrt(c - l^T l)``, so the
        new row of ``Linv`` is ``[-l^T Linv / p, 1 / p]``.
        """
        if self.t == self._x.shape[1]:
            self._grow()
        t = self.t
        if t:
            k = matern52(self.x, x[:, None, :], self.lengthscale)[:, :, 0]
            linv = self.linv
            ell = _matvec(linv, k)
            pivot = np.sqrt(np.maximum(1.0 + self.noise - np.einsum("ni,ni->n", ell, ell), _MIN_PIVOT))
            self._linv[:, t, :t] = -_matvec(linv.transpose(0, 2, 1), ell) / pivot[:, None]
        else:
            pivot = np.sqrt(1.0 + self.noise)
        self._linv[:, t, t] = 1.0 / pivot
        self._x[:, t], self._y[:, t] = x, y
        self.t += 1

    def set_hyper(self, lengthscale: np.ndarray, noise: np.ndarray) -> None:
        """New hyperparameters ``(n,)`` each; refactorises ``K`` from scratch (O(t^3))."""
        self.lengthscale = np.asarray(lengthscale, dtype=float).copy()
        self.noise = np.asarray(noise, dtype=float).copy()
        if self.t:
            k = matern52(self.x, self.x, self.lengthscale) + self.noise[:, None, None] * np.eye(self.t)
            self._linv[:, : self.t, : self.t] = _cholesky_inverse(k)

    def standardised_y(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(y - mean) / std`` per GP, with the means and stds (std 0 -> 1, as scikit-learn)."""
        y = self.y
        mean = y.mean(axis=1)
        std = y.std(axis=1)
        std = np.where(std > 0, std, 1.0)
        return (y - mean[:, None]) / std[:, None], mean, std

    def fit_hyper(self, lengthscales: np.ndarray, noises: np.ndarray, *, refine_steps: int = 0) -> None:
        """Maximise the log marginal likelihood per GP, and refactorise.

        First the best point of the grid ``lengthscales x noises``; then,
        with ``refine_steps``, a golden-section search on ``log(ell)``
        between the grid's neighbours of the chosen length scale (the noise
        kept), every GP's search advancing together. A grid plus a bracketed
        1-d search (not a gradient search) keeps the batched fit cheap,
        robust to local optima and exactly reproducible, and lands within
        ``0.618^refine_steps`` of a grid step of the continuous optimum the
        ``bayesian-optimization`` package's L-BFGS finds.
        """
        ystd, _, _ = self.standardised_y()
        dist = np.sqrt(sq_dists(self.x, self.x))
        grid = np.asarray(lengthscales, dtype=float)
        best = np.full(self.n, -np.inf)
        best_index, best_noise = np.zeros(self.n, dtype=int), self.noise.copy()
        for i, ls in enumerate(grid):
            for nz in noises:
                lml = log_marginal_likelihood(dist, ystd, np.full(self.n, ls), np.full(self.n, float(nz)))
                better = lml > best
                best = np.where(better, lml, best)
                best_index = np.where(better, i, best_index)
                best_noise = np.where(better, nz, best_noise)
        best_ls = grid[best_index]
        if refine_steps and len(grid) > 1:
            low = np.log(grid[np.maximum(best_index - 1, 0)])
            high = np.log(grid[np.minimum(best_index + 1, len(grid) - 1)])
            best_ls = np.exp(_golden_section_max(
                lambda log_ls: log_marginal_likelihood(dist, ystd, np.exp(log_ls), best_noise),
                low, high, np.log(best_ls), best, refine_steps,
            ))  # fmt: skip
        self.set_hyper(best_ls, best_noise)

    def _alpha(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ystd, mean, std = self.standardised_y()
        linv = self.linv
        alpha = _matvec(linv.transpose(0, 2, 1), _matvec(linv, ystd))
        return alpha, mean, std

    def posterior(self, x: np.ndarray, *, standardised: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and standard deviation at ``x (n, m, d)``, each ``(n, m)``.

        In the units of the targets unless ``standardised``.
        """
        alpha, mean, std = self._alpha()
        kx = matern52(self.x, x, self.lengthscale)  # (n, t, m)
        mu = np.matmul(alpha[:, None, :], kx)[:, 0, :]
        v = np.matmul(np.ascontiguousarray(self.linv), kx)
        sd = np.sqrt(np.maximum(1.0 - (v * v).sum(axis=1), 0.0))
        if standardised:
            return mu, sd
        return mu * std[:, None] + mean[:, None], sd * std[:, None]

    def ucb_and_grad(self, x: np.ndarray, kappa: float) -> tuple[np.ndarray, np.ndarray]:
        """Standardised ``mu + kappa * sd`` at ``x (n, s, d)`` and its gradient ``(n, s, d)``.

        ``grad mu = sum_t alpha_t dk_t``, ``grad var = -2 sum_t w_t dk_t``
        with ``w = K^-1 k(x)``.
        """
        alpha, _, _ = self._alpha()
        k, dk = matern52_grad(x, self.x, self.lengthscale)  # (n,s,t), (n,s,t,d)
        linv = np.ascontiguousarray(self.linv)
        v = np.matmul(k, linv.transpose(0, 2, 1))  # rows: (Linv k(x_s))^T
        w = np.matmul(v, linv)  # rows: (K^-1 k(x_s))^T
        mu = _matvec(k, alpha)
        var = np.maximum(1.0 - (v * v).sum(axis=2), 1e-12)
        sd = np.sqrt(var)
        grad_mu = np.matmul(alpha[:, None, None, :], dk)[:, :, 0, :]
        grad_sd = -np.matmul(w[:, :, None, :], dk)[:, :, 0, :] / sd[..., None]
        return mu + kappa * sd, grad_mu + kappa * grad_sd
