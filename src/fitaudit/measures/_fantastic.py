"""Shared machinery of the "Fantastic" measures (private).

Jiang, Neyshabur, Mobahi, Krishnan, Bengio, "Fantastic generalization
measures and where to find them", ICLR 2020 (Appendix C), as computed by the
reference code (nitarshan/robust-generalization-measures,
``data/generation/measures.py``, ``get_all_measures``):

* batch norm is folded into the preceding convolution first;
* "weights" are the kernels of convolutions and linear layers (no biases, no
  batch-norm parameters), each reshaped to ``(out, -1)``; ``d`` is their
  number;
* ``m`` is the number of training examples; the final value is
  ``0.5 (v - log m)`` for the ``LOG_`` measures and ``sqrt(v / m)`` for the
  others.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import numpy as np

from fitaudit._validation import check_float, check_int
from fitaudit.checkpoint import fingerprint
from fitaudit.measures import _torch as T
from fitaudit.measures.base import Measure, ModelRecord, WorkCache
from fitaudit.models.torch_ops import accuracy, device_of
from fitaudit.random import check_random_state

FANTASTIC_REFERENCE = (
    "Jiang et al., Fantastic generalization measures and where to find them, ICLR 2020, Appendix C; "
    "reference code nitarshan/robust-generalization-measures data/generation/measures.py"
)


class FantasticMeasure(Measure):
    """A Fantastic measure on the batch-norm-folded network, with the reference's final scaling."""

    family: ClassVar[str] = "fantastic"
    reference: ClassVar[str] = FANTASTIC_REFERENCE
    #: ``True`` for the reference's ``LOG_`` measures (scaled ``0.5 (v - log m)``)
    log_scaled: ClassVar[bool] = False

    def compute(self, record: ModelRecord) -> float:
        x, y = T.check_record_data(record, self.name)
        model = T.fold_batchnorm(record.model)
        initial = T.fold_batchnorm(record.initial_model) if self.needs_init else None
        return T.fantastic_scale(self.raw(model, initial, x, y), len(x), self.log_scaled)

    @abc.abstractmethod
    def raw(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray) -> float:
        """The value before the final scaling (``model`` and ``initial`` folded, eval mode)."""


class SpectralMeasure(FantasticMeasure):
    """A Fantastic measure reading spectral norms: the layer weight reshaped to ``(out, -1)``.

    Parameters
    ----------
    exact_conv : bool
        Use the exact spectrum of each 2-D convolution as an operator on
        inputs of its size (FFT, Sedghi et al. 2019; the reference's ``_FFT``
        variants) instead of the reshaped kernel's largest singular value.
        Circular padding and stride 1 are assumed (strides are ignored, as
        in the reference); linear layers keep their matrix spectral norm.
    """

    def __init__(self, *, random_state: Any = 0, exact_conv: bool = False) -> None:
        super().__init__(random_state=random_state)
        self.exact_conv = bool(exact_conv)

    def spectral_squares(self, model: Any, x: np.ndarray) -> np.ndarray:
        """``||W_i||_2^2`` of every layer."""
        return np.square(
            np.asarray(T.layer_spectral_norms(model, x, exact_conv=self.exact_conv), dtype=float)
        )


def frobenius_squares(model: Any) -> np.ndarray:
    """``||W_i||_F^2`` of every layer's weight."""
    return np.asarray([float((w.double() ** 2).sum()) for w in T.weights(model)])


def log_sum_form(log_product: float, d: int) -> float:
    """The reference's "sum" form of a log product: ``log d + (1/d) * log_product`` (AM-GM, eq. 35/39)."""
    return float(np.log(d) + log_product / d)


def path_norm(model: Any, input_shape: tuple[int, ...]) -> float:
    """Path norm (Neyshabur et al. 2015): square every parameter, forward all-ones, sum the outputs.

    As the reference's ``_path_norm``: biases (and any batch-norm parameters
    left after folding) are squared too; the model is in eval mode.
    """
    torch = T.torch_()
    squared = T.eval_copy(model)
    with torch.no_grad():
        for p in squared.parameters():
            p.pow_(2)
        out = squared(torch.ones((1, *input_shape), dtype=torch.float32, device=device_of(squared)))
    return float(out.double().sum())


# ----------------------------------------------------------------------------- PAC-Bayes sigma search


class PacBayesMeasure(FantasticMeasure):
    """A PAC-Bayes measure: Gaussian weight noise scaled by a bisection on the accuracy drop.

    Parameters
    ----------
    search_depth : int
        Bisection steps on ``[0, 2]`` (reference: 15).
    montecarlo_samples : int
        Noise draws per step (reference: 10).
    accuracy_displacement, displacement_tolerance : float
        Target drop of training accuracy and its tolerance (0.1, 0.01).
    max_examples : int or None
        Training examples the accuracy is estimated on (a random subset of
        this size, fixed by ``random_state``; None = all, as the reference).
        ``m`` in the formulas is always the full training-set size.
    """

    cost: ClassVar[str] = "expensive"
    #: ``None`` for isotropic noise N(0, sigma^2); eps for the magnitude-aware variant
    magnitude_eps: ClassVar[float | None] = None

    def __init__(
        self,
        *,
        random_state: Any = 0,
        search_depth: int = 15,
        montecarlo_samples: int = 10,
        accuracy_displacement: float = 0.1,
        displacement_tolerance: float = 0.01,
        max_examples: int | None = 5000,
    ) -> None:
        super().__init__(random_state=random_state)
        self.search_depth = check_int(search_depth, "search_depth", minimum=1)
        self.montecarlo_samples = check_int(montecarlo_samples, "montecarlo_samples", minimum=1)
        self.accuracy_displacement = check_float(
            accuracy_displacement, "accuracy_displacement", low=0, high=1
        )
        self.displacement_tolerance = check_float(
            displacement_tolerance, "displacement_tolerance", low=0, high=1
        )
        self.max_examples = (
            None if max_examples is None else check_int(max_examples, "max_examples", minimum=1)
        )

    def compute(self, record: ModelRecord) -> float:
        x, y = T.check_record_data(record, self.name)
        model = T.fold_batchnorm(record.model)
        initial = T.fold_batchnorm(record.initial_model) if self.needs_init else None
        sigma = self.sigma(model, x, y, record.cache)
        return T.fantastic_scale(self.bound(model, initial, x, y, sigma), len(x), self.log_scaled)

    def raw(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray) -> float:
        """:meth:`bound` at a noise scale searched afresh (no record, so no search to share)."""
        return self.bound(model, initial, x, y, self.sigma(model, x, y, WorkCache()))

    @abc.abstractmethod
    def bound(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray, sigma: float) -> float:
        """The value before the final scaling, at the searched noise scale ``sigma``."""

    def sigma(self, model: Any, x: np.ndarray, y: np.ndarray, cache: WorkCache) -> float:
        """The searched noise scale, found once per model record and settings (``cache``: the record's).

        A measure that finds the search in ``cache`` is charged its seconds
        (:class:`~fitaudit.measures.base.WorkCache`), so each is timed as if it ran alone.
        """
        options: dict[str, Any] = {
            "magnitude_eps": self.magnitude_eps,
            "search_depth": self.search_depth,
            "montecarlo_samples": self.montecarlo_samples,
            "accuracy_displacement": self.accuracy_displacement,
            "displacement_tolerance": self.displacement_tolerance,
            "max_examples": self.max_examples,
        }
        key = fingerprint("pacbayes_sigma", sorted(options.items()), repr(self.random_state))
        return cache.get_or_compute(
            key, lambda: pacbayes_sigma(model, x, y, random_state=self.random_state, **options)
        )


def pacbayes_sigma(
    model: Any,
    x: np.ndarray,
    y: np.ndarray,
    *,
    magnitude_eps: float | None = None,
    search_depth: int = 15,
    montecarlo_samples: int = 10,
    accuracy_displacement: float = 0.1,
    displacement_tolerance: float = 0.01,
    max_examples: int | None = None,
    random_state: Any = 0,
) -> float:
    """Noise scale sigma on ``[0, 2]`` at which the mean training accuracy drops by 0.1.

    Jiang et al.'s ``_pacbayes_sigma``: bisection (``search_depth`` steps),
    each step averaging ``montecarlo_samples`` accuracies of the network with
    every parameter perturbed; displacement = |mean perturbed accuracy -
    accuracy|, stop when within ``displacement_tolerance`` of
    ``accuracy_displacement``.

    Noise: isotropic ``N(0, sigma^2)`` per parameter, or with
    ``magnitude_eps`` the magnitude-aware ``N(0, sigma^2 w^2 + eps^2)``.
    The reference code passes ``sigma**2`` (resp. ``sigma**2 |w|**2 +
    eps**2``) where ``torch.normal`` expects a *standard deviation*, so its
    noise has standard deviation sigma^2; we follow the paper's definition
    (``sigma`` is the standard deviation, the variance as written), so our
    sigma is the square root of the reference's for the isotropic search.
    """
    torch = T.torch_()
    rng = check_random_state(random_state)
    xs, ys = T.subsample(x, y, max_examples, rng)
    gen = T.generator(rng)
    base = T.eval_copy(model)
    originals = [p.detach().clone() for p in base.parameters()]
    xs = T.on_model_device(base, xs)  # sent once, read at every noise draw
    acc = accuracy(base, xs, ys)

    def drop_at(sigma: float) -> float:
        accs = []
        with torch.no_grad():
            for _ in range(montecarlo_samples):
                set_noisy_parameters(base, originals, sigma, magnitude_eps, gen)
                accs.append(accuracy(base, xs, ys))
            for p, w in zip(base.parameters(), originals):
                p.copy_(w)
        return abs(float(np.mean(accs)) - acc)

    return T.bisect_sigma(
        drop_at,
        lower=0.0,
        upper=2.0,
        steps=search_depth,
        target=accuracy_displacement,
        tolerance=displacement_tolerance,
    )


def set_noisy_parameters(
    model: Any, originals: list[Any], sigma: float, eps: float | None, gen: Any
) -> None:
    """Set every parameter to ``w + noise``: N(0, sigma^2), or N(0, sigma^2 w^2 + eps^2) with ``eps``."""
    torch = T.torch_()
    with torch.no_grad():
        for p, w in zip(model.parameters(), originals):
            std = torch.full_like(w, sigma) if eps is None else torch.sqrt(sigma**2 * w**2 + eps**2)
            p.copy_(w + std * torch.randn(w.shape, generator=gen, dtype=w.dtype).to(w.device))


def weight_vectors(model: Any, initial: Any | None) -> tuple[Any, Any]:
    """(w, w - w0) as flat double tensors over the weights (``w - w0`` is None without init)."""
    torch = T.torch_()
    w = torch.cat([v.double().reshape(-1) for v in T.weights(model)])
    if initial is None:
        return w, None
    dist = torch.cat(
        [(a.double() - b.double()).reshape(-1) for a, b in T.matched_weights(model, initial)]
    )
    return w, dist


def pacbayes_bound(reference_sq_norm: float, sigma: float, m: int) -> float:
    """``||w_ref||^2 / (4 sigma^2) + log(m / sigma) + 10`` (Jiang et al. eq. 48/49)."""
    return float(reference_sq_norm / (4 * sigma**2) + np.log(m / sigma) + 10)


def pacbayes_mag_bound(reference: Any, dist: Any, sigma: float, eps: float, m: int) -> float:
    """Magnitude-aware bound (Jiang et al. eq. 56/57), as the reference computes it.

    ``1/4 sum_i log((eps^2 + (sigma'^2 + 1) ||w_ref||^2 / omega) / (eps^2 +
    sigma'^2 (w_i - w0_i)^2)) + log(m / sigma') + 10``, omega the number of
    weights.
    """
    omega = reference.numel()
    numerator = eps**2 + (sigma**2 + 1) * float((reference**2).sum()) / omega
    denominator = eps**2 + sigma**2 * dist**2
    return float(0.25 * np.log(numerator / T.host(denominator)).sum() + np.log(m / sigma) + 10)
