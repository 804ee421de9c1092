"""The Gaussian-margin distribution of Werpachowski et al. (2019), Appendix A."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from fitaudit import InputError
from fitaudit.data.gaussian_margin import GaussianMargin


def direct_density(dist: GaussianMargin, x: np.ndarray) -> np.ndarray:
    """rho(x) from scipy's truncated normal and normal densities (small d only)."""
    a = (dist.margin - dist.mean) / dist.sigma
    first = np.where(
        x[:, 0] > dist.margin,
        stats.truncnorm.pdf(x[:, 0], a, np.inf, loc=dist.mean, scale=dist.sigma),
        stats.truncnorm.pdf(-x[:, 0], a, np.inf, loc=dist.mean, scale=dist.sigma),
    )
    first = np.where(np.abs(x[:, 0]) > dist.margin, first, 0.0)
    rest = np.prod(stats.norm.pdf(x[:, 1:], 0, dist.sigma), axis=1)
    return 0.5 * first * rest


def test_log_density_matches_scipy_in_small_dimension():
    dist = GaussianMargin(4)
    rng = np.random.default_rng(0)
    x = rng.normal(0, 3, size=(200, 4))
    x[:5, 0] = [0.0, 0.01, -0.02, 0.03, -0.05]  # inside and just outside the margin band
    expected = direct_density(dist, x)
    got = np.exp(dist.log_density(x))
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=0)
    assert np.all(np.isneginf(dist.log_density(x[:3])))


def test_density_integrates_to_one_in_one_dimension():
    dist = GaussianMargin(1, sigma=0.5)
    grid = np.linspace(-6, 6, 240_001)[:, None]
    integral = np.trapezoid(np.exp(dist.log_density(grid)), grid[:, 0])
    assert integral == pytest.approx(1.0, abs=1e-4)


def test_sampling_follows_the_truncated_mixture():
    dist = GaussianMargin(500)
    x, y = dist.sample(4000, random_state=1)
    assert x.shape == (4000, 500) and set(np.unique(y)) == {0, 1}
    assert np.array_equal(dist.true_label(x), y)
    assert np.all(np.abs(x[:, 0]) > dist.margin)
    a = (dist.margin - dist.mean) / dist.sigma
    first = np.where(y == 1, x[:, 0], -x[:, 0])
    truncated = stats.truncnorm(a, np.inf, loc=dist.mean, scale=dist.sigma)
    assert stats.kstest(first, truncated.cdf).pvalue > 1e-3
    assert stats.kstest(x[:, 7], stats.norm(0, math.sqrt(500)).cdf).pvalue > 1e-3
    assert abs(y.mean() - 0.5) < 0.05


def test_same_seed_same_sample_and_log_density_finite_in_d500():
    dist = GaussianMargin()
    x1, _ = dist.sample(10, random_state=5)
    x2, _ = dist.sample(10, random_state=5)
    assert np.array_equal(x1, x2)
    assert np.all(np.isfinite(dist.log_density(x1)))  # no underflow in log space


def test_bad_input():
    with pytest.raises(InputError, match="`d` must be a positive integer"):
        GaussianMargin(0)
    with pytest.raises(InputError, match="`mean` must exceed `margin`"):
        GaussianMargin(3, mean=0.01)
    with pytest.raises(InputError, match="`x` must have 3 columns"):
        GaussianMargin(3).log_density(np.zeros((2, 4)))
