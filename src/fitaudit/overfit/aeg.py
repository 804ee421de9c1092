"""The adversarial example generator (AEG) protocol.

Werpachowski, Gyorgy, Szepesvari (NeurIPS 2019), Sec. 2-3: an AEG for model
f is a map g with (G1) label preservation, (G2) g(x) = x whenever f(x) is
wrong, and, for image AEGs, (G3) density preservation. For each example it
returns g(x) together with the importance weight h_g(g(x)) = dP/dP_g at
g(x), which makes the adversarial risk estimate
R_g = (1/m) sum_i L(f, g(X_i)) h_g(g(X_i)) unbiased under independence.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from fitaudit._errors import InputError

#: the four translational AEGs of the paper (:class:`fitaudit.overfit.translation.TranslationAEG`)
VARIANTS = ("strongest", "nearest", "random", "random2")

#: the validity condition every translational result must carry
DENSITY_WARNING = (
    "The translational AEG test is valid only under (G3): shifting an image must not "
    "change its density. This holds for objects at uniformly random positions (crops of "
    "larger scenes, e.g. ImageNet crops or free-position canvases); it does NOT hold "
    "for centred datasets such as MNIST or CIFAR-10, where the p-value means nothing."
)


@dataclasses.dataclass
class AEGOutput:
    """What an AEG returns for a batch of m examples.

    Attributes
    ----------
    x_adv : ndarray, shape (m, ...)
        g(X_i).
    weight : ndarray, shape (m,)
        h_g(g(X_i)) in [0, 1] (the density ratio; 1 where g(x) = x is the
        only pre-image of itself).
    adv_loss : ndarray, shape (m,)
        L(f, g(X_i)) in {0, 1}.
    success : ndarray of bool, shape (m,)
        L(f, X_i) = 0 and L(f, g(X_i)) = 1.
    evaluations : int
        Number of model evaluations (images or points scored) spent.
    """

    x_adv: np.ndarray
    weight: np.ndarray
    adv_loss: np.ndarray
    success: np.ndarray
    evaluations: int = 0

    @property
    def weighted_adv_loss(self) -> np.ndarray:
        """L(f, g(X_i)) * h_g(g(X_i)), the terms of R_g."""
        return self.adv_loss * self.weight


def model_n_classes(model: Any, probe: np.ndarray) -> int:
    """k of a classifier adapter, read from one call of ``logits`` on ``probe`` if not known yet.

    Adapters that wrap a model of unknown output width
    (:class:`fitaudit.models.base.Classifier` with ``n_classes=None``) learn
    it from their first output.
    """
    try:
        return int(model.n_classes)
    except (AttributeError, InputError):
        return int(np.shape(model.logits(np.ascontiguousarray(probe, dtype=np.float32)))[1])


class AdversarialExampleGenerator(ABC):
    """Base class of AEGs.

    Subclasses set :attr:`deterministic` and
    :attr:`requires_density_preservation` (together they decide the range U
    of the pairwise test, :attr:`pairwise_range`) and implement
    :meth:`_generate`. :meth:`generate` checks what comes back: shapes,
    losses in {0, 1}, weights in [0, 1] and (G2).
    """

    #: True when g is a deterministic map (with (G3) this gives U = 3/2, see pairwise_range)
    deterministic: bool = True

    #: True when the AEG needs (G3) density preservation from the data
    requires_density_preservation: bool = False

    @property
    def pairwise_range(self) -> float:
        """The range U of T_i = L(f, g(X_i)) h_g(g(X_i)) - L(f, X_i) for the pairwise test.

        T_i lies in [-1, max h_g on successful adversarial examples]. For a
        deterministic g that preserves the density (G3), a successful x' = g(x)
        has the pre-images x' and x of equal density, so h_g(x') <= 1/2 and
        U = 3/2 (Werpachowski et al. 2019, Sec. 3). Otherwise (randomised g,
        or a deterministic g that changes the density, such as the linear
        gradient step on the Gaussian data) h_g can approach 1 and U = 2.
        """
        return 1.5 if self.deterministic and self.requires_density_preservation else 2.0

    def moves(self) -> dict[str, Any] | None:
        """The maps a translational AEG draws its candidates from (``eps``, ``stride``, ``mirror``), which the
        verdict names; None for the other AEGs (:class:`~fitaudit.overfit.translation.TranslationAEG` overrides it)."""
        return None

    def model_inputs(self, x: np.ndarray) -> np.ndarray:
        """What the model scores for the inputs ``x``: L(f, X_i) is computed on these.

        The identity here; an AEG whose data carry more than the model sees
        overrides it (:class:`~fitaudit.overfit.translation.TranslationAEG`
        takes canvases with a spare margin and the model scores their centre
        crops).

        Parameters
        ----------
        x : ndarray, shape (m, ...)
            The sample as handed to :meth:`generate`.

        Returns
        -------
        ndarray, shape (m, ...)
        """
        return x

    @abstractmethod
    def _generate(self, model: Any, x: np.ndarray, y: np.ndarray) -> AEGOutput:
        """Compute g(x) and h_g(g(x)) for a batch (no checks)."""

    def generate(self, model: Any, x: np.ndarray, y: np.ndarray, *, loss: np.ndarray) -> AEGOutput:
        """Run the AEG and check (G2): misclassified points must come back unchanged.

        Parameters
        ----------
        model : classifier adapter
        x : ndarray, shape (m, ...)
        y : ndarray of int, shape (m,)
        loss : ndarray, shape (m,)
            L(f, X_i), the zero-one loss of the model on the clean examples.
        """
        out = self._generate(model, x, y)
        m = len(x)
        name = type(self).__name__
        for field in ("weight", "adv_loss", "success"):
            if np.shape(getattr(out, field)) != (m,):
                raise InputError(
                    f"the AEG {name} returned `{field}` of shape {np.shape(getattr(out, field))}; "
                    f"expected ({m},)."
                )
        if np.shape(out.x_adv) != np.shape(x):
            raise InputError(
                f"the AEG {name} returned `x_adv` of shape {np.shape(out.x_adv)}; "
                f"expected {np.shape(x)}."
            )
        if not np.all(np.isfinite(out.weight)):
            raise InputError(f"the AEG {name} returned NaN or infinite weights h_g.")
        if not np.all((out.adv_loss == 0) | (out.adv_loss == 1)):
            raise InputError(f"the AEG {name} returned `adv_loss` values other than 0 and 1.")
        wrong = np.asarray(loss) > 0
        moved = np.any((out.x_adv != x).reshape(len(x), -1), axis=1)
        if np.any(wrong & moved):
            raise InputError(
                f"the AEG {type(self).__name__} broke (G2): it changed "
                f"{int(np.sum(wrong & moved))} misclassified example(s); g(x) must equal x "
                "whenever the model is wrong on x."
            )
        if np.any(wrong & (out.adv_loss == 0)):
            raise InputError(
                f"the AEG {name} reported `adv_loss` = 0 on a misclassified example it left "
                "unchanged; L(f, g(x)) must equal L(f, x) = 1 there."
            )
        if np.any(out.weight < 0) or np.any(out.weight > 1 + 1e-12):
            raise InputError(
                f"the AEG {type(self).__name__} returned weights h_g outside [0, 1]."
            )
        return out
