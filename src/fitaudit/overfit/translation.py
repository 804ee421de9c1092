"""Translational adversarial example generators for image classifiers.

Werpachowski, Gyorgy, Szepesvari, "Detecting overfitting via adversarial
examples", NeurIPS 2019, Sec. 5 and Appendix B.

For an image x the candidates are ``G(x) = {tau_v(x) : v in V_eps} u {x}``
with ``V_eps = {v in Z^2 : v != 0, ||v||_inf <= eps}``. If f(x) is wrong,
``g(x) = x`` (G2). Otherwise:

* ``strongest``: among misclassified candidates, the one maximising
  ``l_exc = max_{i != y} logit_i - logit_y``;
* ``nearest``: the misclassified candidate with the smallest ``||v||_2``;
* ``random``: uniform over ``G(x) \\ {x}`` whether or not it succeeds;
* ``random2``: uniform over ``G(x)``.

Ties in ``l_exc`` (strongest) or ``||v||_2`` (nearest) go to the first
candidate in row-major order of v (``v_row`` ascending, then ``v_col``
ascending); no misclassified candidate means ``g(x) = x``.

Under (G3) (translations preserve the density) the importance weight at
``x' = g(x)`` is ``h_g(x') = 1 / (1 + n(x'))`` with
``n(x') = #{u in V_eps : g(tau_{-u}(x')) = x'}`` for the deterministic
variants and ``n(x') = sum_u P(g(tau_{-u}(x')) = x')`` for the randomised
ones (paper, App. B). The formula is the density ratio dP/dP_g on the set E
of misclassified points, the only place where it enters
``L(f, g(x)) h_g(g(x))``; :class:`TranslationAEG` reports it for every
example (also where ``L(f, g(x)) = 0``). Candidates are identified with their
shifts: two different shifts are taken to give different images, which holds
for natural images and almost surely for continuous ones.

Shifts beyond a model's augmentation (``stride``). The weight's derivation
uses only that the shift set V is finite, symmetric (``-V = V``, so that
every pre-image of x' is ``tau_{-u}(x')`` for some ``u in V``) and made of
translations that keep the density; nothing in it needs V to be the
contiguous square. :class:`TranslationAEG` takes ``stride`` s and uses the
lattice ``V = {s u : u in V_eps}``: shifts of s, 2 s, ... pixels per axis,
the same formula ``h_g = 1 / (1 + n(x'))`` over those. A model trained on
random crops of up to a pixels has seen its training images at every shift
of the contiguous ``V_eps`` with ``eps <= a``; with ``s > a`` none of the
AEG's shifts lies inside its augmentation. It needs ``P >= 3 eps s`` (the
weight looks 3 eps lattice steps away) and the (G3) check at those shifts
(:func:`fitaudit.overfit.g3.check_g3` with the same ``stride``), and costs
what ``eps`` does at stride 1: at most ``(4 eps + 1)^2`` crops per image.

Images with a spare margin make translation lossless: the data are canvases
``(m, C, H + 2P, W + 2P)`` and x is their centre crop (sign convention in
:mod:`fitaudit.overfit.translation_grid`). ``h_g(g(x))`` needs g at every
neighbour of g(x), hence predictions at shifts up to ``3 eps`` from x, so
``P >= 3 eps`` is required. Each needed translation is evaluated once per
example (:class:`~fitaudit.overfit.translation_grid.OutcomeCache`): at most
``(4 eps + 1)^2`` images for strongest/nearest (inside the
``(6 eps + 1)^2`` grid of the paper) and at most ``(2 eps + 1)^2 + 1`` for
random/random2, against ``(2 eps + 1)^2 (|V_eps| + 1)`` for the naive
enumeration in the tests (``tests/reference_translation.py``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import check_array, check_choice, check_int, check_labels
from fitaudit.data.io import centre_crop
from fitaudit.models import as_classifier
from fitaudit.overfit.aeg import (
    DENSITY_WARNING,
    VARIANTS,
    AdversarialExampleGenerator,
    AEGOutput,
    model_n_classes,
)
from fitaudit.overfit.translation_device import unit_canvases
from fitaudit.overfit.translation_grid import OutcomeCache, crop, shift_canvases, shift_grid
from fitaudit.random import RandomState, as_seed, check_random_state

#: deterministic variants (U = 3/2 in the pairwise test)
DETERMINISTIC_VARIANTS = ("strongest", "nearest")

# examples per block: bounds the (examples x |V| x |V|) index arrays to ~1M entries
_BLOCK_ENTRIES = 2**20


@dataclasses.dataclass
class TranslationAEGOutput(AEGOutput):
    """:class:`AEGOutput` plus what a translational AEG knows about each example.

    ``x_adv`` holds canvases like the input, moved so that their centre crop
    is g(X_i) (pixels that would come from outside the canvas are 0); the
    adversarial images themselves are in :attr:`images`.

    Attributes
    ----------
    images : ndarray, shape (m, C, H, W)
        g(X_i), the crops the model scored.
    shift : ndarray of int, shape (m, 2)
        v with ``g(X_i) = tau_v(X_i)``; ``(0, 0)`` where ``g(X_i) = X_i``.
    clean_loss : ndarray, shape (m,)
        L(f, X_i) on the centre crops.
    preimage_mass : ndarray, shape (m,)
        ``n(g(X_i))`` (a count for strongest/nearest, an expected count for
        random/random2), so that ``weight = 1 / (1 + preimage_mass)``.
    """

    images: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 1, 1, 1)))
    shift: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 2), np.int64))
    clean_loss: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    preimage_mass: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))

    @property
    def evaluations_per_example(self) -> float:
        """Average number of images the model scored per example."""
        return self.evaluations / max(len(self.weight), 1)


#: the output type the AEG's builder makes (TranslationAEGOutput or a subclass, the mirror AEG's)
_Output = TypeVar("_Output", bound="TranslationAEGOutput")


@dataclasses.dataclass
class _Run:
    """What one run of the AEG found, per example: g's shift, n(g(X_i)), L(f, X_i), L(f, g(X_i)), f(X_i)."""

    shift: np.ndarray
    mass: np.ndarray
    clean_loss: np.ndarray
    adv_loss: np.ndarray
    prediction: np.ndarray
    evaluations: int


def check_canvases(x: Any, *, margin: int, name: str = "x") -> np.ndarray:
    """Validate a batch of canvases ``(m, C, H + 2P, W + 2P)`` with values in [0, 1]."""
    canvases = check_array(x, name, ndim=4, dtype=np.float32, value_range=(0.0, 1.0))
    height, width = canvases.shape[2] - 2 * margin, canvases.shape[3] - 2 * margin
    if height < 1 or width < 1:
        raise InputError(
            f"`{name}` holds canvases of size {canvases.shape[2]}x{canvases.shape[3]}, too small "
            f"for a margin of {margin} pixels on each side (`margin` = {margin})."
        )
    return canvases


def random_shifts(variant: str, eps: int, m: int, random_state: RandomState) -> np.ndarray:
    """Draw the shifts of the randomised AEGs, one per example, in example order.

    ``random`` draws uniformly from ``V_eps``, ``random2`` from ``V_eps u {0}``
    (the shift used only where f(x) is right; elsewhere g(x) = x).
    """
    options = shift_grid(eps, include_zero=variant == "random2")
    rng = check_random_state(random_state)
    return options[rng.integers(0, len(options), size=m)]


class TranslationAEG(AdversarialExampleGenerator):
    """Translational AEG (paper Sec. 5, App. B) on images with a spare margin.

    Parameters
    ----------
    eps : int
        Largest shift per axis (``||v||_inf <= eps``), at least 1.
    margin : int
        Spare pixels P on each side of the images in the canvases handed to
        :meth:`generate`; must satisfy ``P >= 3 eps``.
    variant : {"strongest", "nearest", "random", "random2"}
    batch_size : int
        Images per model call.
    progress : bool
        Progress bars (stderr) while evaluating translations.
    stride : int
        Pixels per step of the shifts: ``V = {stride * u : u in V_eps}``
        (module docstring; 1 is the paper's ``V_eps``). Needs
        ``P >= 3 eps stride``.
    random_state : None, int, SeedSequence or Generator
        Seeds the draws of ``random``/``random2``. Checked here and turned
        into the AEG's integer seed (:func:`fitaudit.random.as_seed`: an int
        as it is, None or a Generator draws one), kept in ``random_state``;
        every call of :meth:`generate` starts again from it, and it is part
        of :meth:`fingerprint`.

    Notes
    -----
    The data handed to :meth:`generate` are canvases
    ``(m, C, H + 2P, W + 2P)`` in [0, 1]; the model scores ``H x W`` crops.
    The test built on this AEG is valid only under (G3); see
    :data:`DENSITY_WARNING`.
    """

    requires_density_preservation = True

    #: whether the candidates include mirror images (:class:`~fitaudit.overfit.mirror.MirrorTranslationAEG`)
    mirror = False

    def __init__(
        self,
        *,
        eps: int,
        margin: int,
        variant: str = "strongest",
        batch_size: int = 512,
        progress: bool = False,
        random_state: RandomState = None,
        stride: int = 1,
    ) -> None:
        self.eps = check_int(eps, "eps", minimum=1)
        self.margin = check_int(margin, "margin", minimum=0)
        self.stride = check_int(stride, "stride", minimum=1)
        reach = 3 * self.eps * self.stride
        if self.margin < reach:
            fix = (
                f"Use eps <= {self.margin // (3 * self.stride)} or canvases with a larger margin."
                if self.margin >= 3 * self.stride
                else f"The translational AEG needs canvases with at least {3 * self.stride} spare pixels per "
                "side at this stride (e.g. `fitaudit shapes dataset --free-position`)."
            )
            times = "3 * eps" if self.stride == 1 else "3 * eps * stride"
            raise InputError(
                f"`margin` must be at least {times} = {reach} spare pixels per side "
                f"(h_g needs predictions at shifts up to {times}); got {self.margin}. {fix}"
            )
        self.variant = check_choice(variant, "variant", VARIANTS)
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)
        self.progress = bool(progress)
        self.random_state = as_seed(random_state)
        self.deterministic = self.variant in DETERMINISTIC_VARIANTS
        self.warning = DENSITY_WARNING

    def __repr__(self) -> str:
        stride = f", stride={self.stride}" if self.stride != 1 else ""
        return f"TranslationAEG(eps={self.eps}, margin={self.margin}, variant={self.variant!r}{stride})"

    def fingerprint(self) -> str:
        """A hash of what the AEG's output depends on (not ``batch_size`` nor ``progress``)."""
        from fitaudit.checkpoint import fingerprint

        if self.stride == 1:  # the key of every run saved before the stride existed
            return fingerprint("TranslationAEG", self.eps, self.margin, self.variant, self.random_state)
        return fingerprint("TranslationAEG", self.eps, self.margin, self.variant, self.random_state, self.stride)

    def moves(self) -> dict[str, Any]:
        """``eps``, ``stride`` (pixels per step) and ``mirror`` (mirror images among the candidates): the set V."""
        return {"eps": self.eps, "stride": self.stride, "mirror": bool(self.mirror)}

    def model_inputs(self, x: np.ndarray) -> np.ndarray:
        """The images the model scores: the centre crops of the canvases ``x``."""
        return centre_crop(check_canvases(x, margin=self.margin), self.margin)

    def generate(
        self, model: Any, x: np.ndarray, y: np.ndarray, *, loss: np.ndarray
    ) -> TranslationAEGOutput:
        """Run the AEG on canvases ``x`` with the base class's checks.

        Besides (G2), checks that ``loss`` is L(f, X_i) on the centre crops
        (:meth:`model_inputs`), not on the canvases.
        """
        out = super().generate(model, x, y, loss=loss)
        assert isinstance(out, TranslationAEGOutput)
        differ = int(np.sum((np.asarray(loss) > 0) != (out.clean_loss > 0)))
        if differ:
            raise InputError(
                f"`loss` must be the zero-one loss of the model on the images, i.e. the centre "
                f"crops of the canvases (TranslationAEG.model_inputs(x)); it differs on {differ} "
                "example(s). Was the model scored on the whole canvases?"
            )
        return out

    def _generate(self, model: Any, x: np.ndarray, y: np.ndarray) -> TranslationAEGOutput:
        """g(X_i) and h_g(g(X_i)) for canvases ``x`` of shape (m, C, H + 2P, W + 2P)."""
        canvases = check_canvases(x, margin=self.margin)
        return self._output(TranslationAEGOutput, canvases, self._run(model, canvases, y))

    def _output(self, kind: type[_Output], canvases: np.ndarray, run: _Run, **extra: Any) -> _Output:
        """The AEG's output of ``kind`` from g's choices ``run`` on ``canvases`` (each example's canvas as g saw
        it; the mirror AEG's are the chosen orientations): the shifted canvases, their centre crops, the
        weights 1 / (1 + h mass) and the losses; ``extra``: the fields ``kind`` adds."""
        return kind(
            x_adv=shift_canvases(canvases, run.shift),
            images=crop(canvases, self.margin, run.shift),
            weight=1.0 / (1.0 + run.mass),
            adv_loss=run.adv_loss,
            success=(run.clean_loss == 0) & (run.adv_loss == 1),
            evaluations=run.evaluations,
            shift=run.shift,
            clean_loss=run.clean_loss,
            preimage_mass=run.mass,
            **extra,
        )

    def terms(self, model: Any, pixels: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
        """The per-example vectors of the overfitting test on canvases, without building the images.

        What :func:`fitaudit.overfit.one_model.example_terms` returns
        (``loss`` L(f, X_i), ``weighted_adv_loss`` L(f, g(X_i)) h_g(g(X_i)),
        ``success``, ``prediction`` f(X_i), ``evaluations``), read from the
        AEG's cache: the centre crop is the shift 0 of the cache, so the
        model scores nothing twice and the canvases go to its device once
        (:class:`~fitaudit.overfit.translation_device.CropScorer`).

        Parameters
        ----------
        model : classifier adapter
            On the canvases' crops (a :class:`~fitaudit.models.pipeline_classifier.PipelineClassifier`
            for pixels that still need normalising).
        pixels : ndarray, shape (m, C, H + 2P, W + 2P)
            uint8 pixels (0-255, scaled by 1/255 on the device) or floats in [0, 1].
        y : ndarray of int, shape (m,)
        """
        if not isinstance(pixels, np.ndarray) or pixels.dtype != np.uint8:
            pixels = check_canvases(pixels, margin=self.margin)
        elif pixels.ndim != 4 or min(pixels.shape[2:]) <= 2 * self.margin:
            raise InputError(f"`pixels` must be canvases (m, C, H + 2P, W + 2P) with P = {self.margin}; "
                             f"got shape {pixels.shape}.")
        run = self._run(model, pixels, y)
        if np.any((run.clean_loss > 0) & np.any(run.shift != 0, axis=1)):  # (G2), true by construction
            raise RuntimeError("translational AEG: a misclassified example was moved")
        return {
            "loss": run.clean_loss,
            "prediction": run.prediction,
            "weighted_adv_loss": run.adv_loss / (1.0 + run.mass),
            "success": (run.clean_loss == 0) & (run.adv_loss == 1),
            "evaluations": np.array(run.evaluations),
        }

    def _run(self, model: Any, canvases: np.ndarray, y: np.ndarray) -> _Run:
        """The shifts g chooses, n(g(X_i)) and the losses, over blocks of examples (each block's canvases on the device once)."""
        model = as_classifier(model)
        n_classes = model_n_classes(model, unit_canvases(centre_crop(canvases[:1], self.margin)))
        labels = check_labels(y, "y", n_classes=n_classes, length=len(canvases))
        m = len(canvases)
        drawn = (
            None
            if self.deterministic
            else random_shifts(self.variant, self.eps, m, self.random_state)
        )
        n_shifts = (2 * self.eps + 1) ** 2
        block = max(1, _BLOCK_ENTRIES // n_shifts**2)
        shift = np.zeros((m, 2), dtype=np.int64)
        clean_loss, adv_loss = np.zeros(m), np.zeros(m)
        mass = np.zeros(m)
        prediction = np.zeros(m, dtype=np.int64)
        evaluations = 0
        for start in range(0, m, block):
            part = slice(start, start + block)
            cache = OutcomeCache(
                model,
                canvases[part],
                labels[part],
                margin=self.margin,
                reach=3 * self.eps,
                n_classes=n_classes,
                batch_size=self.batch_size,
                progress=self.progress,
                stride=self.stride,
            )
            if drawn is None:
                shift[part], mass[part] = self._deterministic_block(cache)
            else:
                shift[part], mass[part] = self._random_block(cache, drawn[part])
            centre = np.zeros((len(shift[part]), 2), np.int64)
            clean_loss[part] = cache.lookup(centre)[0]
            prediction[part] = cache.predicted(centre)
            adv_loss[part] = cache.lookup(shift[part])[0]
            evaluations += cache.evaluations
        return _Run(self.stride * shift, mass, clean_loss, adv_loss, prediction, evaluations)

    def _choices(self, cache: OutcomeCache, points: np.ndarray) -> np.ndarray:
        """Index into ``V_eps`` of g's choice at ``tau_z(x_i)`` for shifts z (m, n, 2); -1 = stay."""
        candidates = shift_grid(self.eps, include_zero=False)
        wrong_here, _ = cache.lookup(points)
        wrong, excess = cache.lookup(points[:, :, None, :] + candidates)
        if self.variant == "strongest":
            score = np.where(wrong, excess, -np.inf)
        else:
            score = np.where(wrong, -np.sum(candidates**2, axis=1).astype(float), -np.inf)
        best = np.argmax(score, axis=-1)  # first maximum: the row-major tie rule
        return np.where(wrong.any(axis=-1) & ~wrong_here, best, -1)

    def _deterministic_block(self, cache: OutcomeCache) -> tuple[np.ndarray, np.ndarray]:
        """Shifts chosen by strongest/nearest and the counts n(g(x)) for one block."""
        vectors = shift_grid(self.eps, include_zero=False)
        m = len(cache.labels)
        cache.ensure(np.zeros((m, 2), np.int64), self.eps)
        choice = self._choices(cache, np.zeros((m, 1, 2), np.int64))[:, 0]
        shift = np.where(choice[:, None] >= 0, vectors[choice], 0)
        # neighbours tau_{-u}(g(x)) = tau_{v-u}(x) and their candidates: shifts up to 3 eps
        cache.ensure(shift, 2 * self.eps)
        neighbour_choice = self._choices(cache, shift[:, None, :] - vectors[None, :, :])
        count = np.sum(neighbour_choice == np.arange(len(vectors)), axis=1)
        return shift, count.astype(float)

    def _random_block(
        self, cache: OutcomeCache, drawn: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Shifts chosen by random/random2 and the expected counts n(g(x)) for one block."""
        vectors = shift_grid(self.eps, include_zero=False)
        m = len(cache.labels)
        cache.ensure(np.zeros((m, 2), np.int64), 0)
        wrong_here, _ = cache.lookup(np.zeros((m, 2), np.int64))
        shift = np.where(wrong_here[:, None], 0, drawn)
        cache.ensure(shift, self.eps)
        neighbours_wrong, _ = cache.lookup(shift[:, None, :] - vectors[None, :, :])
        n_options = len(vectors) + (1 if self.variant == "random2" else 0)
        return shift, np.sum(~neighbours_wrong, axis=1) / n_options
