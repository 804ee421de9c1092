"""The linear-gradient AEG with exact importance weights (Gaussian-margin problem).

Werpachowski, Gyorgy, Szepesvari (NeurIPS 2019), Sec. 4 and Appendix A. For
a linear model f(x) = sign(w.x + b) and u = w / ||w||_2, the AEG takes one L2
gradient step against the true label y in {-1, +1}:

    g(x) = x - eps * y * u   if f(x) = f*(x) and f*(x - eps y u) = f*(x),
    g(x) = x                 otherwise.

The map is injective on the points it moves, so a misclassified x' has at
most two pre-images: itself and p = x' + eps y u (when p is correctly
classified and f*(p) = f*(x')). With the known density rho,

    h_g(x') = rho(x') / (rho(x') + rho(p) (1 - L(f, p)) 1[f*(p) = f*(x')]),

evaluated as a logistic sigmoid of ln rho(x') - ln rho(p) (densities in
d = 500 underflow). h_g is only needed where L(f, g(x)) = 1; elsewhere the
returned weight is 1 (it multiplies a zero loss).

The step moves mass, it does not preserve the density, so h_g may exceed 1/2:
the pairwise test needs U = 2 although g is deterministic.

Everything the density and the predictions need is a function of four
numbers per example (w.x + b, x_1, ||x_{2:d}||^2 and u_{2:d}.x_{2:d}), so the
weights for many step sizes and many models cost O(m) each once these are
known: :class:`LinearProjections` and :func:`linear_gradient_step`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from scipy import special

from fitaudit._errors import InputError
from fitaudit._validation import check_array, check_float, check_labels
from fitaudit.data.gaussian_margin import GaussianMargin
from fitaudit.overfit.aeg import AdversarialExampleGenerator, AEGOutput


@dataclasses.dataclass
class LinearProjections:
    """The per-example numbers the linear-gradient AEG needs, for K models at once.

    Arrays have shape (K, m) (one row per model) or (m,) where they do not
    depend on the model.
    """

    score: np.ndarray  #: w.x + b, shape (K, m)
    along: np.ndarray  #: u_{2:d} . x_{2:d}, shape (K, m)
    first: np.ndarray  #: x_1, shape (m,)
    rest_sq_norm: np.ndarray  #: ||x_{2:d}||^2, shape (m,)
    label: np.ndarray  #: f*(x) in {0, 1}, shape (m,)
    w_norm: np.ndarray  #: ||w||_2, shape (K, 1)
    u_first: np.ndarray  #: u_1, shape (K, 1)

    @classmethod
    def compute(
        cls, weights: np.ndarray, biases: np.ndarray, x: np.ndarray, y: np.ndarray
    ) -> LinearProjections:
        """Project m points on K linear models (``weights`` of shape (K, d))."""
        w_norm = np.linalg.norm(weights, axis=1, keepdims=True)
        if np.any(w_norm == 0):
            raise InputError("the linear model has w = 0; the gradient direction is undefined.")
        unit = weights / w_norm
        first = x[:, 0].copy()
        return cls(
            score=weights @ x.T + np.asarray(biases, dtype=np.float64)[:, None],
            along=unit @ x.T - unit[:, :1] * first,
            first=first,
            rest_sq_norm=np.einsum("ij,ij->i", x, x) - first**2,
            label=np.asarray(y, dtype=np.int64),
            w_norm=w_norm,
            u_first=unit[:, :1],
        )


@dataclasses.dataclass
class LinearGradientStep:
    """Outcome of the AEG at one step size for K models (arrays of shape (K, m))."""

    loss: np.ndarray  #: L(f, x)
    moved: np.ndarray  #: g(x) != x
    adv_loss: np.ndarray  #: L(f, g(x))
    weight: np.ndarray  #: h_g(g(x)) where adv_loss = 1, else 1

    @property
    def weighted_adv_loss(self) -> np.ndarray:
        """L(f, g(x)) h_g(g(x))."""
        return self.adv_loss * self.weight


def linear_gradient_step(
    distribution: GaussianMargin, proj: LinearProjections, eps: float
) -> LinearGradientStep:
    """Apply the linear-gradient AEG with step ``eps`` using only the projections."""
    positive = proj.label == 1
    sign = np.where(positive, 1.0, -1.0)
    shift = eps * sign  # the step is x -> x - shift * u
    loss = (proj.score > 0) != positive
    ortho_sq = 1.0 - proj.u_first**2  # ||u_{2:d}||^2
    first_step = proj.first - shift * proj.u_first
    moved = ~loss & ((first_step > 0) == positive)
    # the adversarial point x' = g(x)
    score_adv = np.where(moved, proj.score - shift * proj.w_norm, proj.score)
    first_adv = np.where(moved, first_step, proj.first)
    along_adv = np.where(moved, proj.along - shift * ortho_sq, proj.along)
    rest_adv = np.where(
        moved, proj.rest_sq_norm - 2 * shift * proj.along + shift**2 * ortho_sq, proj.rest_sq_norm
    )
    adv_loss = (score_adv > 0) != positive
    # its other candidate pre-image p = x' + shift * u
    first_pre = first_adv + shift * proj.u_first
    rest_pre = rest_adv + 2 * shift * along_adv + shift**2 * ortho_sq
    is_preimage = ((score_adv + shift * proj.w_norm > 0) == positive) & ((first_pre > 0) == positive)
    log_adv = distribution.log_density_from_parts(first_adv, rest_adv)
    log_pre = distribution.log_density_from_parts(first_pre, rest_pre)
    with np.errstate(invalid="ignore"):
        ratio = special.expit(log_adv - log_pre)
    weight = np.where(adv_loss & is_preimage & np.isfinite(log_pre), ratio, 1.0)
    return LinearGradientStep(
        loss=loss.astype(np.float64),
        moved=moved,
        adv_loss=adv_loss.astype(np.float64),
        weight=weight,
    )


def linear_parameters(model: Any) -> tuple[np.ndarray, float]:
    """(w, b) of a binary linear model exposing scikit-learn's ``coef_`` / ``intercept_``.

    A :mod:`fitaudit.models` adapter is looked through (its ``model`` attribute).
    """
    if not hasattr(model, "coef_") and hasattr(getattr(model, "model", None), "coef_"):
        model = model.model
    if not hasattr(model, "coef_"):
        raise InputError(
            "the linear-gradient AEG needs a linear model with `coef_` (and `intercept_`), such "
            f"as fitaudit.overfit.LinearModel or sklearn's LogisticRegression; got {type(model).__name__}."
        )
    w = np.asarray(model.coef_, dtype=np.float64)
    if w.ndim == 2 and w.shape[0] == 1:
        w = w[0]
    if w.ndim != 1:
        raise InputError(f"the model's `coef_` must describe one binary linear model; got shape {w.shape}.")
    b = np.asarray(getattr(model, "intercept_", 0.0), dtype=np.float64).reshape(-1)
    return w, float(b[0]) if b.size else 0.0


class LinearGradientAEG(AdversarialExampleGenerator):
    """One-step L2 gradient AEG for a linear model on :class:`GaussianMargin` data.

    Werpachowski, Gyorgy, Szepesvari (NeurIPS 2019), Sec. 4 / Appendix A:
    g(x) = x - eps y w/||w|| when x is correctly classified and the step keeps
    its true label, with the exact weight h_g from the known density.

    Parameters
    ----------
    eps : float
        Step length (> 0); the paper sweeps 1e-2 .. 1e2.
    distribution : GaussianMargin
        The data distribution: gives f* and the density rho.
    """

    deterministic = True
    requires_density_preservation = False

    def __init__(self, eps: float, distribution: GaussianMargin) -> None:
        self.eps = check_float(eps, "eps", low=0.0, low_inclusive=False)
        if not isinstance(distribution, GaussianMargin):
            raise InputError(
                f"`distribution` must be a GaussianMargin; got {type(distribution).__name__}."
            )
        self.distribution = distribution

    def __repr__(self) -> str:
        return f"LinearGradientAEG(eps={self.eps:g}, distribution={self.distribution!r})"

    def _generate(self, model: Any, x: np.ndarray, y: np.ndarray) -> AEGOutput:
        points = check_array(x, "x", ndim=2, min_len=1)
        labels = check_labels(y, "y", n_classes=2, length=len(points))
        if not np.array_equal(labels, self.distribution.true_label(points)):
            raise InputError("`y` must be the true labels f*(x) = 1[x_1 > 0] of the Gaussian-margin data.")
        w, b = linear_parameters(model)
        if len(w) != points.shape[1]:
            raise InputError(f"the model has {len(w)} weights but `x` has {points.shape[1]} columns.")
        proj = LinearProjections.compute(w[None, :], np.array([b]), points, labels)
        step = linear_gradient_step(self.distribution, proj, self.eps)
        moved = step.moved[0]
        sign = np.where(labels == 1, 1.0, -1.0)
        x_adv = points.copy()
        x_adv[moved] -= (self.eps * sign[moved])[:, None] * (w / np.linalg.norm(w))[None, :]
        adv_loss = step.adv_loss[0]
        return AEGOutput(
            x_adv=x_adv,
            weight=step.weight[0],
            adv_loss=adv_loss,
            success=(step.loss[0] == 0) & (adv_loss == 1),
            evaluations=len(points),
        )
