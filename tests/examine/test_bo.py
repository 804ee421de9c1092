"""The GP-UCB examiner: its batched GP against scikit-learn and a direct solve, and its search."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import Matern

from fitaudit import InputError
from fitaudit.data.factors import Factor, FactorSpace
from fitaudit.examine import get_examiner
from fitaudit.examine._gp import BatchedGP, log_marginal_likelihood, matern52, sq_dists
from fitaudit.examine.bo import BOExaminer


def observations(n: int = 3, t: int = 25, d: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.random((n, t, d))
    y = np.sin(3.0 * x).sum(-1) + 0.1 * rng.normal(size=(n, t)) + np.arange(n)[:, None]
    return x, y


def sklearn_gp(x: np.ndarray, y: np.ndarray, lengthscale: float, noise: float) -> GaussianProcessRegressor:
    kernel = Matern(length_scale=lengthscale, length_scale_bounds="fixed", nu=2.5)
    return GaussianProcessRegressor(kernel, alpha=noise, normalize_y=True, optimizer=None).fit(x, y)


LENGTHSCALES = np.array([0.3, 0.8, 2.0])
NOISES = np.array([1e-6, 1e-3, 1e-2])


def test_incremental_posterior_equals_scikit_learn_and_a_direct_solve() -> None:
    x, y = observations()
    gp = BatchedGP(3, 4)
    gp.set_hyper(LENGTHSCALES, NOISES)
    for i in range(x.shape[1]):
        gp.add(x[:, i], y[:, i])
    test = np.random.default_rng(1).random((3, 40, 4))
    mean, sd = gp.posterior(test)
    for i in range(3):
        reference = sklearn_gp(x[i], y[i], LENGTHSCALES[i], NOISES[i])
        ref_mean, ref_sd = reference.predict(test[i], return_std=True)
        np.testing.assert_allclose(mean[i], ref_mean, atol=1e-6)
        np.testing.assert_allclose(sd[i], ref_sd, atol=1e-6)
        # direct solve with the full kernel matrix
        k = matern52(x[i : i + 1], x[i : i + 1], LENGTHSCALES[i : i + 1])[0] + NOISES[i] * np.eye(25)
        ks = matern52(x[i : i + 1], test[i : i + 1], LENGTHSCALES[i : i + 1])[0]
        ystd = (y[i] - y[i].mean()) / y[i].std()
        direct_mean = ks.T @ np.linalg.solve(k, ystd) * y[i].std() + y[i].mean()
        direct_var = 1.0 - np.einsum("tm,tm->m", ks, np.linalg.solve(k, ks))
        np.testing.assert_allclose(mean[i], direct_mean, atol=1e-6)
        np.testing.assert_allclose(sd[i], np.sqrt(direct_var) * y[i].std(), atol=1e-6)


def test_refactorised_and_extended_factors_agree() -> None:
    """Extending after a refit equals fitting all points with the final hyperparameters."""
    x, y = observations(t=30)
    grown = BatchedGP(3, 4)
    for i in range(20):
        grown.add(x[:, i], y[:, i])
    grown.set_hyper(LENGTHSCALES, NOISES)
    for i in range(20, 30):
        grown.add(x[:, i], y[:, i])
    direct = BatchedGP(3, 4)
    for i in range(30):
        direct.add(x[:, i], y[:, i])
    direct.set_hyper(LENGTHSCALES, NOISES)
    np.testing.assert_allclose(grown.linv, direct.linv, atol=1e-6)
    # Linv is the inverse Cholesky factor: Linv K Linv^T = I
    k = matern52(x, x, LENGTHSCALES) + NOISES[:, None, None] * np.eye(30)
    identity = grown.linv @ k @ grown.linv.transpose(0, 2, 1)
    np.testing.assert_allclose(identity, np.broadcast_to(np.eye(30), identity.shape), atol=1e-6)


def test_log_marginal_likelihood_matches_scikit_learn_and_the_grid_search_takes_its_maximum() -> None:
    x, y = observations()
    ystd = (y - y.mean(1, keepdims=True)) / y.std(1, keepdims=True)
    ours = log_marginal_likelihood(np.sqrt(sq_dists(x, x)), ystd, LENGTHSCALES, NOISES)
    for i in range(3):
        reference = sklearn_gp(x[i], y[i], LENGTHSCALES[i], NOISES[i]).log_marginal_likelihood_value_
        assert ours[i] == pytest.approx(reference, abs=1e-8)
    gp = BatchedGP(3, 4)
    for i in range(x.shape[1]):
        gp.add(x[:, i], y[:, i])
    grid_ls, grid_noise = np.array([0.1, 0.4, 1.0, 3.0]), np.array([1e-4, 1e-2, 1e-1])
    gp.fit_hyper(grid_ls, grid_noise)
    for i in range(3):
        values = {
            (ls, nz): sklearn_gp(x[i], y[i], ls, nz).log_marginal_likelihood_value_
            for ls in grid_ls
            for nz in grid_noise
        }
        assert (gp.lengthscale[i], gp.noise[i]) == max(values, key=values.__getitem__)


@pytest.mark.slow
def test_refined_length_scale_is_scikit_learns_maximum_likelihood_estimate() -> None:
    """Grid + golden section lands on the length scale scikit-learn's L-BFGS fit finds (noise fixed)."""
    x, y = observations(t=40)
    gp = BatchedGP(3, 4)
    for i in range(x.shape[1]):
        gp.add(x[:, i], y[:, i])
    grid = np.geomspace(0.03, 10.0, 12)
    gp.fit_hyper(grid, np.array([1e-3]), refine_steps=25)
    ystd = (y - y.mean(1, keepdims=True)) / y.std(1, keepdims=True)
    dist = np.sqrt(sq_dists(x, x))
    for i in range(3):
        kernel = Matern(length_scale=1.0, length_scale_bounds=(0.03, 10.0), nu=2.5)  # the grid's range
        fitted = GaussianProcessRegressor(kernel, alpha=1e-3, normalize_y=True, n_restarts_optimizer=3,
                                          random_state=0).fit(x[i], y[i])  # fmt: skip
        assert gp.lengthscale[i] == pytest.approx(fitted.kernel_.length_scale, rel=1e-3)
        assert gp.lengthscale[i] not in grid  # refined off the grid
    ours = log_marginal_likelihood(dist, ystd, gp.lengthscale, gp.noise)
    for ls in grid:  # never worse than the best grid point
        assert np.all(ours >= log_marginal_likelihood(dist, ystd, np.full(3, ls), gp.noise) - 1e-12)


def test_ucb_gradient_matches_finite_differences() -> None:
    x, y = observations()
    gp = BatchedGP(3, 4)
    gp.set_hyper(LENGTHSCALES, NOISES)
    for i in range(x.shape[1]):
        gp.add(x[:, i], y[:, i])
    points = np.random.default_rng(2).random((3, 5, 4))
    value, grad = gp.ucb_and_grad(points, 2.0)
    mean, sd = gp.posterior(points, standardised=True)
    np.testing.assert_allclose(value, mean + 2.0 * sd, atol=1e-10)
    eps = 1e-6
    for j in range(4):
        step = np.zeros(4)
        step[j] = eps
        numeric = (gp.ucb_and_grad(points + step, 2.0)[0] - gp.ucb_and_grad(points - step, 2.0)[0]) / (2 * eps)
        np.testing.assert_allclose(grad[..., j], numeric, atol=1e-5)


SPACE = FactorSpace([Factor(f"f{j}", -1.0, 2.0, 0.0, "u") for j in range(4)])


def bump(factors: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """A narrow bump (width 0.12 of the range) at ``centres`` ``(n, d)``: the loss to maximise."""
    unit = (factors + 1.0) / 3.0
    return np.exp(-((unit - centres[:, None, :]) ** 2).sum(-1) / (2 * 0.12**2))


def best_found(name: str, seed: int, steps: int = 40, n: int = 4) -> float:
    centres = np.random.default_rng(100 + seed).uniform(0.2, 0.8, (n, 4))
    examiner = get_examiner(name, random_state=seed)
    examiner.start(SPACE, n)
    best = np.full(n, -np.inf)
    for _ in range(steps):
        factors = examiner.ask()
        losses = bump(factors, centres)
        examiner.tell(factors, losses)
        best = np.maximum(best, losses.max(axis=1))
    return float(best.mean())


@pytest.mark.slow
def test_bo_finds_a_narrow_bump_that_random_search_misses() -> None:
    bo = np.mean([best_found("bo", seed) for seed in range(3)])
    rand = np.mean([best_found("random", seed) for seed in range(3)])
    # measured: BO about 0.99, random about 0.11
    assert bo > 0.9
    assert bo > rand + 0.5


def test_local_candidates_perturb_the_best_observations() -> None:
    centres = np.random.default_rng(5).uniform(0.2, 0.8, (2, 4))
    examiner = BOExaminer(random_state=3, n_candidates=8, n_local=20)
    examiner.start(SPACE, 2)
    for _ in range(10):
        factors = examiner.ask()
        examiner.tell(factors, bump(factors, centres))
    candidates = examiner._candidates()
    assert candidates.shape == (2, 28, 4) and candidates.min() >= 0.0 and candidates.max() <= 1.0
    gp = examiner.gp_
    best = np.take_along_axis(gp.x, np.argsort(-gp.y, axis=1)[:, :5, None], axis=1)  # (2, 5, 4)
    nearest = np.sqrt(((candidates[:, :, None, :] - best[:, None]) ** 2).sum(-1)).min(axis=2)  # (2, 28)
    sd = np.minimum(0.2 * gp.lengthscale, 0.1)  # the perturbation's scale per coordinate
    assert np.all(nearest[:, 8:] < 5 * sd[:, None])  # every local candidate lies near an incumbent ...
    assert nearest[:, 8:].mean() < 0.5 * nearest[:, :8].mean()  # ... far nearer than the uniform ones
    assert examiner.ask().shape == (2, 1, 4)


@pytest.mark.slow
def test_instances_batched_together_equal_instances_examined_alone() -> None:
    centres = np.random.default_rng(5).uniform(0.2, 0.8, (3, 4))
    together = BOExaminer(random_state=11)
    together.start(SPACE, 3)
    alone = BOExaminer(random_state=11)
    alone.start(SPACE, 1)
    for _ in range(25):
        factors, first = together.ask(), alone.ask()
        np.testing.assert_allclose(factors[:1], first, atol=1e-9)
        together.tell(factors, bump(factors, centres))
        alone.tell(first, bump(first, centres[:1]))
    # other instances' losses do not change instance 0's search
    other = BOExaminer(random_state=11)
    other.start(SPACE, 3)
    shifted = centres.copy()
    shifted[1:] = 0.5
    for _ in range(25):
        factors = other.ask()
        other.tell(factors, bump(factors, shifted))
    np.testing.assert_allclose(other.ask()[0], together.ask()[0], atol=1e-9)


def test_periodic_factors_wrap_and_fixed_factors_stay_fixed() -> None:
    space = FactorSpace(
        [
            Factor("angle", 0.0, 360.0, 0.0, "deg", periodic=True),
            Factor("fixed", 1.0, 1.0, 1.0, "u"),
            Factor("x", 0.0, 1.0, 0.5, "u"),
        ]
    )
    examiner = BOExaminer(random_state=0)
    examiner.start(space, 2)
    for _ in range(15):
        factors = examiner.ask()
        # the loss peaks at the seam 0 = 360 degrees of the periodic factor
        losses = np.cos(np.deg2rad(factors[..., 0])) - (factors[..., 2] - 0.5) ** 2
        examiner.tell(factors, losses)
        assert np.all(factors[..., 1] == 1.0)
    wrapped = examiner._project(np.array([[[1.25, 0.0, 1.25]]]))
    np.testing.assert_allclose(wrapped, [[[0.25, 0.0, 1.0]]])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kappa": -1.0}, "`kappa` must be in"),
        ({"n_initial": 0}, "`n_initial` must be a positive integer; got 0."),
        ({"refit_every": 1.5}, "`refit_every` must be an integer"),
        ({"n_candidates": 0}, "`n_candidates` must be a positive integer"),
    ],
)
def test_bad_settings_name_the_argument(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(InputError, match=message):
        BOExaminer(**kwargs)
