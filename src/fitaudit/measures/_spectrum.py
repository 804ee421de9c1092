"""Empirical spectral densities of layer weights, as weightwatcher computes them (private).

Heavy-tailed self-regularisation (Martin & Mahoney, "Implicit
self-regularization in deep neural networks", JMLR 22(165), 2021; "Predicting
trends in the quality of state-of-the-art neural networks without access to
training or testing data", Nature Communications 12, 4122, 2021;
docs/measures.md#weight-spectrum-measures). The reference implementation is the ``weightwatcher`` package
(0.7.7); this module reproduces its default ``analyze()`` per layer:

* layers: every ``Linear`` and ``Conv2d`` (ONNX: the weight initializers of
  ``Gemm``, ``MatMul`` and ``Conv`` nodes), in forward order; batch norm is
  *not* folded (weightwatcher reads the raw weights); a layer is skipped
  when it has fewer than 8 or more than 15000 eigenvalues, or ``N > 50000``
  (weightwatcher's ``min_evals``, ``max_evals``, ``max_N``);
* a dense weight is one matrix W (N x M, N >= M); a convolution kernel
  (out, in, kh, kw) gives ``rf = kh * kw`` matrices ``W[:, :, i, j]``
  (transposed to N >= M) whose eigenvalues are pooled, after weightwatcher's
  ``conv2d_norm`` scaling of W by ``sqrt(1/2)``;
* eigenvalues lambda = squared singular values of W (of ``X = W^T W``, not
  divided by N: weightwatcher's default ``normalize=False``);
* power law p(lambda) ~ lambda^-alpha on lambda >= lambda_min, alpha by
  maximum likelihood and lambda_min by the smallest Kolmogorov-Smirnov
  distance (Clauset, Shalizi & Newman, SIAM Review 51, 2009), fitted on the
  eigenvalues above 1e-5 by weightwatcher's own fitter
  (``weightwatcher.WW_powerlaw.WWFit``, its default since 0.7; the older
  ``powerlaw`` package chooses other lambda_min on the same data);
* MP soft rank lambda_+ / lambda_max, lambda_+ the bulk edge of the
  Marchenko-Pastur law fitted to the rescaled ESD as weightwatcher's
  ``RMT_Util.fit_density_with_range`` fits it (scikit-learn's kernel
  density, scipy's grid search), the density estimated once per layer.

weightwatcher is imported lazily (the ``spectrum`` extra); its import and
its small-sample fitter print to stdout, which is swallowed here.
"""

from __future__ import annotations

import abc
import contextlib
import dataclasses
import io
from typing import Any, ClassVar

import numpy as np

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit.measures import _torch as T
from fitaudit.measures.base import Measure, ModelRecord, WorkCache

SPECTRUM_REFERENCE = (
    "Martin & Mahoney, JMLR 22(165) 2021 and Nature Communications 12:4122 2021; "
    "reference implementation weightwatcher 0.7.7 (WeightWatcher.analyze defaults)"
)

#: weightwatcher's defaults: layers with fewer/more eigenvalues (or a larger N) are skipped
MIN_EVALS, MAX_EVALS, MAX_N = 8, 15000, 50000
#: eigenvalues at or below this are left out of the power-law fit (weightwatcher's EVALS_THRESH)
EVALS_THRESH = 1e-5
#: weightwatcher's conv2d_norm: each kernel slice is scaled by sqrt(1/2) before its SVD
CONV2D_SCALE = float(np.sqrt(0.5))


@dataclasses.dataclass(frozen=True)
class LayerSpectrum:
    """The pooled eigenvalues of one layer and its power-law fit.

    Attributes
    ----------
    name : str
        Module name (torch) or initializer name (ONNX).
    kind : {"dense", "conv2d"}
    n, m : int
        Sizes of each matrix, N >= M.
    rf : int
        Matrices pooled (kernel height x width; 1 for a dense layer).
    evals : ndarray
        Eigenvalues, ascending.
    alpha, xmin, ks_distance : float
        Power-law exponent, lambda_min and the KS distance of the fit.
    """

    name: str
    kind: str
    n: int
    m: int
    rf: int
    evals: np.ndarray
    alpha: float
    xmin: float
    ks_distance: float

    @property
    def lambda_max(self) -> float:
        """Largest eigenvalue (the squared spectral norm)."""
        return float(self.evals[-1])

    @property
    def log_spectral_norm(self) -> float:
        """log10 lambda_max."""
        return float(np.log10(self.lambda_max))

    @property
    def alpha_weighted(self) -> float:
        """alpha log10 lambda_max."""
        return self.alpha * self.log_spectral_norm

    @property
    def stable_rank(self) -> float:
        """sum lambda / lambda_max = ||W||_F^2 / ||W||_2^2 (pooled over the kernel's matrices)."""
        return float(self.evals.sum() / self.lambda_max)


def _quiet_import(module: str) -> Any:
    """Import a weightwatcher module without its import-time prints."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return import_optional(module, "the weight-spectrum measures")


# ----------------------------------------------------------------------------- weights
def weight_tensors(model: Any) -> list[tuple[str, str, np.ndarray]]:
    """``(name, kind, weight)`` of every dense and 2-D convolution layer, in forward order.

    ``model`` is a torch module, or an object with ``weight_tensors()``
    returning the same triples (the ONNX models of an imported population).
    Weights are float64, torch's layout: dense (out, in), conv (out, in, kh, kw).
    """
    own = getattr(model, "weight_tensors", None)
    if callable(own):
        found: list[tuple[str, str, np.ndarray]] = own()
    else:
        torch = import_optional("torch", "the weight-spectrum measures")
        found = []
        for name, module in model.named_modules():
            if isinstance(module, torch.nn.Linear):
                found.append((name, "dense", T.host(module.weight)))
            elif isinstance(module, torch.nn.Conv2d):
                found.append((name, "conv2d", T.host(module.weight)))
    if not found:
        raise InputError("`record.model` has no dense or 2-D convolution layer; the spectrum measures need weights.")
    return found


def layer_matrices(kind: str, weight: np.ndarray) -> tuple[list[np.ndarray], int, int, int]:
    """The matrices of a layer (each N x M, N >= M), N, M and the receptive-field size rf."""
    if kind == "dense":
        w = weight if weight.shape[0] >= weight.shape[1] else weight.T
        return [w], int(w.shape[0]), int(w.shape[1]), 1
    out, inp, kh, kw = weight.shape
    mats = [weight[:, :, i, j] * CONV2D_SCALE for i in range(kh) for j in range(kw)]
    mats = [w if w.shape[0] >= w.shape[1] else w.T for w in mats]
    return mats, max(out, inp), min(out, inp), int(kh * kw)


def power_law_fit(evals: np.ndarray) -> tuple[float, float, float]:
    """``(alpha, lambda_min, KS distance)`` of the power law fitted to ``evals > 1e-5`` (weightwatcher's WWFit)."""
    ww_powerlaw = _quiet_import("weightwatcher.WW_powerlaw")
    data = np.asarray(evals, dtype=np.float64)
    data = data[data > EVALS_THRESH]
    if len(data) < 2:
        raise InputError(f"a power law needs at least 2 eigenvalues above {EVALS_THRESH}; got {len(data)}.")
    with contextlib.redirect_stdout(io.StringIO()):  # WWFit prints "SMALL N PL FIT" below 20 eigenvalues
        fit = ww_powerlaw.WWFit(data)
    if not np.isfinite(fit.alpha):
        raise InputError("the power-law fit failed (non-finite alpha).")
    return float(fit.alpha), float(fit.xmin), float(fit.D)


def layer_spectrum(name: str, kind: str, weight: np.ndarray) -> LayerSpectrum | None:
    """The layer's pooled ESD and power-law fit; None for a layer weightwatcher skips."""
    mats, n, m, rf = layer_matrices(kind, np.asarray(weight, dtype=np.float64))
    if m * rf < MIN_EVALS or m * rf > MAX_EVALS or n > MAX_N:
        return None
    svs = [np.linalg.svd(w, compute_uv=False) for w in mats]
    evals = np.sort(np.concatenate(svs) ** 2)
    alpha, xmin, ks = power_law_fit(evals)
    return LayerSpectrum(name=name, kind=kind, n=n, m=m, rf=rf, evals=evals, alpha=alpha, xmin=xmin, ks_distance=ks)


def model_spectra(model: Any, cache: WorkCache | None = None) -> list[LayerSpectrum]:
    """Every analysed layer's spectrum (found once per model record: ``cache``, the record's; reuse is charged)."""

    def compute() -> list[LayerSpectrum]:
        spectra = [s for s in (layer_spectrum(*t) for t in weight_tensors(model)) if s is not None]
        if not spectra:
            raise InputError(
                f"`record.model` has no layer with {MIN_EVALS} to {MAX_EVALS} eigenvalues (weightwatcher's defaults)."
            )
        return spectra

    return compute() if cache is None else cache.get_or_compute("spectra/1", compute)


def mp_softrank(spectrum: LayerSpectrum) -> float:
    """lambda_+ / lambda_max of the layer's ESD rescaled to unit mean (weightwatcher's ``mp_fit``).

    The ESD is scaled by ``len(evals) / sum(evals)``; sigma of the
    Marchenko-Pastur law with aspect ratio Q = N / M (the quarter-circle law
    of the singular values when Q = 1) is fitted to a linear-kernel density
    estimate (bandwidth 0.1, on 1000 points, where it exceeds 0.01) by
    ``scipy.optimize.brute`` on weightwatcher's grid (0.05 to 2 times the
    sigma that puts the bulk edge at lambda_max, steps of 0.01 of it) with
    its Nelder-Mead finish; lambda_+ = (sigma (1 + 1/sqrt(Q)))^2. This is
    weightwatcher's ``fit_density_with_range`` and ``resid_mp`` with the
    density estimated once instead of once per grid point (about 200 times):
    the same residuals, hence the same sigma.
    """
    from scipy import optimize
    from sklearn.neighbors import KernelDensity

    evals = spectrum.evals
    scaled = evals * (len(evals) / float(evals.sum()))
    q = spectrum.n / spectrum.m
    edge = np.sqrt(scaled.max() / (1 + 1 / np.sqrt(q)) ** 2)  # weightwatcher's calc_sigma
    to_fit = np.sqrt(scaled) if q == 1 else scaled
    kde = KernelDensity(kernel="linear", bandwidth=0.1).fit(to_fit.reshape(-1, 1))
    x = np.linspace(0, to_fit.max() + 0.5, 1000)
    density = np.exp(kde.score_samples(x[:, None]))
    keep = density > 0.01
    x, density = x[keep], density[keep]
    peak = x[np.argmax(density)]

    def loss(p: np.ndarray) -> float:
        sigma = p
        with np.errstate(all="ignore"):
            if q == 1:
                model = np.nan_to_num(1 / (np.pi * sigma * sigma) * np.sqrt(4 - x**2))
            else:
                upper, lower = (sigma * (1 + np.sqrt(1 / q))) ** 2, (sigma * (1 - np.sqrt(1 / q))) ** 2
                if np.any((upper < peak) | (upper > x.max()) | (lower > peak)):
                    return float(1000.0**2 * len(x))
                model = np.nan_to_num(1 / (2 * np.pi * sigma * sigma * x / q) * np.sqrt((upper - x) * (x - lower)))
        return float(np.sum((model - density) ** 2))

    grid = (slice(0.05 * edge, 2.0 * edge, 0.01 * edge),)
    sigma = float(optimize.brute(loss, grid, full_output=True)[0][0])
    bulk_max = (sigma * (1 + 1 / np.sqrt(q))) ** 2
    return float(bulk_max / scaled.max())


class SpectrumMeasure(Measure):
    """A mean over layers of a per-layer spectral quantity (weights only; torch or ONNX models).

    Every quantity is oriented as Martin & Mahoney read it: smaller alpha,
    alpha-weighted, log spectral norm, stable rank and MP soft rank go with
    better generalization, so each is used as it is (larger = larger
    predicted gap).
    """

    needs_data: ClassVar[bool] = False
    family: ClassVar[str] = "spectrum"
    reference: ClassVar[str] = SPECTRUM_REFERENCE
    formats: ClassVar[tuple[str, ...]] = ("torch", "onnx")

    def compute(self, record: ModelRecord) -> float:
        return float(np.mean([self.layer_value(s) for s in model_spectra(record.model, record.cache)]))

    @abc.abstractmethod
    def layer_value(self, spectrum: LayerSpectrum) -> float:
        """The per-layer quantity averaged over layers."""
