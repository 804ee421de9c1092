"""The Gaussian-margin problem with a known density.

Werpachowski, Gyorgy, Szepesvari (NeurIPS 2019), Sec. 4 and Appendix A:
X = R^d (d = 500), P an equal mixture of two isotropic Gaussians with means
mu_+ = (+1, 0, ..., 0) and mu_- = -mu_+ and standard deviation
sigma = sqrt(d), each truncated to leave a margin around x_1 = 0: the +
component has density 0 where x_1 <= margin (0.025), the - component where
x_1 >= -margin. The label is f*(x) = sign(x_1), written as 1 (x_1 > 0) or 0.

Sampling is exact (the truncated coordinate through the inverse normal CDF)
and the density is in closed form: for x_1 > margin,

    rho(x) = 1/2 * N(x; mu_+, sigma^2 I) / Z,   Z = P(N(1, sigma^2) > margin)
           = norm.sf((margin - 1) / sigma),

symmetrically for x_1 < -margin, and 0 in between. Densities in d = 500
underflow, so everything is in log space.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

from fitaudit._errors import InputError
from fitaudit._validation import check_array, check_float, check_int
from fitaudit.random import RandomState, check_random_state


class GaussianMargin:
    """The truncated two-Gaussian mixture of the paper's synthetic experiment.

    Parameters
    ----------
    d : int
        Dimension (paper: 500).
    sigma : float, optional
        Standard deviation of every coordinate; default sqrt(d).
    margin : float
        Half-width of the empty band around x_1 = 0 (paper: 0.025).
    mean : float
        |mu_1| of the two components (paper: 1).
    """

    def __init__(
        self, d: int = 500, *, sigma: float | None = None, margin: float = 0.025, mean: float = 1.0
    ) -> None:
        self.d = check_int(d, "d", minimum=1)
        self.sigma = math.sqrt(self.d) if sigma is None else check_float(
            sigma, "sigma", low=0.0, low_inclusive=False
        )
        self.margin = check_float(margin, "margin", low=0.0)
        self.mean = check_float(mean, "mean")
        if self.mean <= self.margin:
            raise InputError(f"`mean` must exceed `margin` = {self.margin:g}; got {self.mean:g}.")
        #: log Z, the log-probability that N(mean, sigma^2) exceeds the margin
        self.log_normaliser = float(stats.norm.logsf((self.margin - self.mean) / self.sigma))

    def __repr__(self) -> str:
        return (
            f"GaussianMargin(d={self.d}, sigma={self.sigma:.6g}, margin={self.margin:g}, "
            f"mean={self.mean:g})"
        )

    def sample(self, n: int, *, random_state: RandomState = None) -> tuple[np.ndarray, np.ndarray]:
        """Draw n i.i.d. points and their labels f*(x) in {0, 1}.

        Returns
        -------
        x : ndarray of float64, shape (n, d)
        y : ndarray of int64, shape (n,)
        """
        n = check_int(n, "n", minimum=1)
        rng = check_random_state(random_state)
        y = rng.integers(0, 2, size=n)
        x = rng.normal(0.0, self.sigma, size=(n, self.d))
        # inverse-CDF sampling of N(mean, sigma^2) restricted to (margin, inf)
        low = stats.norm.cdf((self.margin - self.mean) / self.sigma)
        u = rng.uniform(low, 1.0, size=n)
        first = self.mean + self.sigma * special.ndtri(u)
        first = np.maximum(first, np.nextafter(self.margin, np.inf))
        x[:, 0] = np.where(y == 1, first, -first)
        return x, y.astype(np.int64)

    def true_label(self, x: np.ndarray) -> np.ndarray:
        """f*(x) = sign(x_1) as a label: 1 where x_1 > 0, else 0."""
        array = self._check_points(x)
        return (array[:, 0] > 0).astype(np.int64)

    def log_density(self, x: np.ndarray) -> np.ndarray:
        """ln rho(x) for each row of x (-inf inside the margin band)."""
        array = self._check_points(x)
        rest = np.einsum("ij,ij->i", array[:, 1:], array[:, 1:])
        return self.log_density_from_parts(array[:, 0], rest)

    def log_density_from_parts(self, first: np.ndarray, rest_sq_norm: np.ndarray) -> np.ndarray:
        """ln rho(x) from x_1 and ||(x_2, ..., x_d)||^2 (the density depends on nothing else)."""
        first = np.asarray(first, dtype=np.float64)
        s2 = self.sigma**2
        dist2 = (np.abs(first) - self.mean) ** 2 + np.asarray(rest_sq_norm, dtype=np.float64)
        log_norm = -0.5 * self.d * math.log(2.0 * math.pi * s2) + math.log(0.5) - self.log_normaliser
        out = log_norm - dist2 / (2.0 * s2)
        return np.where(np.abs(first) > self.margin, out, -np.inf)

    def _check_points(self, x: np.ndarray) -> np.ndarray:
        array = check_array(x, "x", ndim=2)
        if array.shape[1] != self.d:
            raise InputError(f"`x` must have {self.d} columns (the dimension d); got {array.shape[1]}.")
        return array
