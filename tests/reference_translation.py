"""Slow, direct implementation of the translational AEGs (reference for tests and benchmarks).

Werpachowski, Gyorgy, Szepesvari (NeurIPS 2019), Sec. 5 and App. B, taken
literally: for each example, g(x) is computed by scoring every candidate
image; then, for x' = g(x), each of the |V_eps| neighbours ``tau_{-u}(x')``
is cropped and g of it is computed from scratch (scoring all its candidates
again), and ``n(x')`` counts (or, for the randomised variants, sums the
probabilities of) the neighbours whose g is the image x' itself, compared
pixel by pixel. Nothing is cached, so an example costs up to
``(2 eps + 1)^2 (|V_eps| + 1)`` model evaluations for strongest/nearest.
Use :class:`fitaudit.overfit.translation.TranslationAEG` for real work.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit.overfit.translation import DETERMINISTIC_VARIANTS, TranslationAEGOutput
from fitaudit.overfit.translation_grid import crop_windows, shift_canvases


class _Counter:
    """Scores images one candidate set at a time and counts them."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.evaluations = 0

    def logits(self, images: list[np.ndarray]) -> np.ndarray:
        self.evaluations += len(images)
        return np.asarray(self.model.logits(np.stack(images).astype(np.float32)), dtype=np.float64)


def _is_wrong(logits: np.ndarray, label: int) -> bool:
    return bool(int(np.argmax(logits)) != label)


def _excess(logits: np.ndarray, label: int) -> float:
    return max(float(v) for i, v in enumerate(logits) if i != label) - float(logits[label])


def _offsets(eps: int, *, include_zero: bool) -> list[tuple[int, int]]:
    """Shifts with ``||v||_inf <= eps``, top-to-bottom then left-to-right."""
    return [
        (row, col)
        for row in range(-eps, eps + 1)
        for col in range(-eps, eps + 1)
        if include_zero or (row, col) != (0, 0)
    ]


def _g_distribution(
    image_at: Any, counter: _Counter, z: tuple[int, int], label: int, eps: int, variant: str
) -> list[tuple[np.ndarray, float]]:
    """The law of g(tau_z(x)) as (image, probability) pairs, computed from scratch."""
    here = image_at(z)
    if _is_wrong(counter.logits([here])[0], label):
        return [(here, 1.0)]
    if variant in ("random", "random2"):
        options = _offsets(eps, include_zero=variant == "random2")
        return [(image_at((z[0] + a, z[1] + b)), 1.0 / len(options)) for a, b in options]
    offsets = _offsets(eps, include_zero=False)
    images = [image_at((z[0] + a, z[1] + b)) for a, b in offsets]
    scores = counter.logits(images)
    best: int | None = None
    best_key = 0.0
    for k, ((a, b), logits) in enumerate(zip(offsets, scores)):
        if not _is_wrong(logits, label):
            continue
        key = _excess(logits, label) if variant == "strongest" else -float(a * a + b * b)
        if best is None or key > best_key:  # strict: the first in row-major order wins ties
            best, best_key = k, key
    return [(here if best is None else images[best], 1.0)]


def naive_translation_aeg(
    model: Any,
    canvases: np.ndarray,
    y: np.ndarray,
    *,
    eps: int,
    margin: int,
    variant: str,
    drawn: np.ndarray | None = None,
    stride: int = 1,
) -> TranslationAEGOutput:
    """Run a translational AEG by direct enumeration (no cache, no checks).

    Parameters
    ----------
    model : classifier adapter
        Anything with ``.logits(x)``.
    canvases : ndarray, shape (m, C, H + 2P, W + 2P)
    y : ndarray of int, shape (m,)
    eps, margin : int
        As in :class:`~fitaudit.overfit.translation.TranslationAEG` (``margin >= 3 eps``).
    variant : {"strongest", "nearest", "random", "random2"}
    drawn : ndarray of int, shape (m, 2), optional
        For random/random2: the shift used for each correctly classified
        example (see :func:`~fitaudit.overfit.translation.random_shifts`), in
        steps of ``stride``.
    stride : int
        Pixels per step of the shifts (``margin >= 3 eps stride``): every
        shift above is a lattice vector, the crop it names sits ``stride``
        times as far from the centre.

    Returns
    -------
    TranslationAEGOutput
    """
    windows = crop_windows(np.asarray(canvases, dtype=np.float32), margin)
    counter = _Counter(model)
    m = len(canvases)
    out = {key: np.zeros(m) for key in ("weight", "adv_loss", "clean_loss", "mass")}
    shifts = np.zeros((m, 2), dtype=np.int64)
    images = []
    for i in range(m):
        label = int(y[i])

        def image_at(v: tuple[int, int], i: int = i) -> np.ndarray:
            return np.array(windows[i, :, margin + stride * v[0], margin + stride * v[1]])

        x = image_at((0, 0))
        clean_wrong = _is_wrong(counter.logits([x])[0], label)
        if variant in DETERMINISTIC_VARIANTS:
            x_adv = _g_distribution(image_at, counter, (0, 0), label, eps, variant)[0][0]
        else:
            if drawn is None:
                raise InputError("`drawn` must hold the random shifts for random/random2.")
            x_adv = x if clean_wrong else image_at((int(drawn[i, 0]), int(drawn[i, 1])))
        shift = next(
            v for v in _offsets(eps, include_zero=True) if np.array_equal(image_at(v), x_adv)
        )
        mass = 0.0
        for u in _offsets(eps, include_zero=False):
            neighbour = (shift[0] - u[0], shift[1] - u[1])
            for image, probability in _g_distribution(
                image_at, counter, neighbour, label, eps, variant
            ):
                if np.array_equal(image, x_adv):
                    mass += probability
        out["clean_loss"][i] = float(clean_wrong)
        out["adv_loss"][i] = float(_is_wrong(counter.logits([x_adv])[0], label))
        out["mass"][i] = mass
        out["weight"][i] = 1.0 / (1.0 + mass)
        shifts[i] = (stride * shift[0], stride * shift[1])
        images.append(x_adv)
    return TranslationAEGOutput(
        x_adv=shift_canvases(np.asarray(canvases, dtype=np.float32), shifts),
        images=np.stack(images),
        weight=out["weight"],
        adv_loss=out["adv_loss"],
        success=(out["clean_loss"] == 0) & (out["adv_loss"] == 1),
        evaluations=counter.evaluations,
        shift=shifts,
        clean_loss=out["clean_loss"],
        preimage_mass=out["mass"],
    )
