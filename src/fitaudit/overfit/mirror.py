"""Translations and their mirror images: a translational AEG with the horizontal flip.

Werpachowski, Gyorgy, Szepesvari (NeurIPS 2019), Sec. 3 and App. B: an AEG
g maps x to one of its candidates G(x) and weights ``g(x)`` by the density
ratio ``h_g = dP / dP_g``. The derivation of ``h_g = 1 / (1 + n(x'))``
needs only a finite set V of invertible, volume-preserving maps that is
closed under inverses and keeps the density (G3): then every pre-image of
``x'`` is ``u^{-1}(x')`` for some ``u in V``, each of density ``rho(x')``,
and on the misclassified points (where ``g(x') = x'``) the density of
``g(X)`` is ``rho(x') (1 + n(x'))`` with
``n(x') = #{u in V : g(u^{-1}(x')) = x'}``. Pixel shifts and the horizontal
flip F are permutations of the canvas's pixels, so V may hold both:

    V = {tau_v : v in s V_eps} u {F o tau_v : v in s W_eps},

``W_eps = {v : ||v||_inf <= eps}`` (the flip alone included), s the stride.
F tau_v F = tau_{(v_row, -v_col)}, so ``(F o tau_v)^{-1} = F o
tau_{(-v_row, v_col)}``: V is closed under inverses. A candidate of the
image ``crop(F^o C, w)`` of a canvas C (``o`` in {0, 1} flips) under
``F^t o tau_v`` is ``crop(F^{o xor t} C, M^t (w + v))`` with
``M(a, b) = (a, -b)``, since ``F crop(C, w) = crop(F C, M w)``: every
image the AEG needs is a crop of the canvas or of its mirror image, at
shifts up to ``3 eps s`` (P >= 3 eps s, as without the flip), and each is
scored once (:class:`~fitaudit.overfit.translation_grid.OutcomeCache` over
both).

The flip keeps the density only where the world is mirror-symmetric (crops
of natural scenes, not text or a scene with a fixed handedness): the (G3)
check tests it with the shifts, drawing each image's other crop from the
whole V (:func:`fitaudit.overfit.g3.check_g3` with ``mirror=True``).
Adding the flip is one AEG, one test at its level: it is no multiple test.
For a model trained with random flips it adds little (it has seen the
mirror images); for one trained without, it adds the answers the mirror
image changes.

Variants as for :class:`~fitaudit.overfit.translation.TranslationAEG`, the
candidates in the order of V above (shifts row-major, then flipped shifts
row-major) for the tie rule; ``nearest`` ranks a candidate by ``||v||_2``
of its shift (the flip alone is the nearest).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from fitaudit._validation import check_labels
from fitaudit.data.io import centre_crop
from fitaudit.models import as_classifier
from fitaudit.overfit.aeg import model_n_classes
from fitaudit.overfit.translation import (
    _BLOCK_ENTRIES,
    TranslationAEG,
    TranslationAEGOutput,
    _Run,
    check_canvases,
)
from fitaudit.overfit.translation_device import unit_canvases
from fitaudit.overfit.translation_grid import OutcomeCache, shift_grid
from fitaudit.random import check_random_state


def mirror_set(eps: int) -> tuple[np.ndarray, np.ndarray]:
    """V in the module docstring's order, in lattice units: ``(flip (K,) of bool, shift (K, 2))``."""
    plain, flipped = shift_grid(eps, include_zero=False), shift_grid(eps)
    flips = np.concatenate([np.zeros(len(plain), bool), np.ones(len(flipped), bool)])
    return flips, np.concatenate([plain, flipped])


def act(
    flip: np.ndarray, move: np.ndarray, o: np.ndarray, w: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``F^flip o tau_move`` applied to the points ``crop(F^o C, w)``: ``(o xor flip, M^flip (w + move))`` (broadcast)."""
    target = w + move
    target = np.stack([target[..., 0], np.where(flip, -target[..., 1], target[..., 1])], axis=-1)
    return o ^ flip, target


def inverse(flip: np.ndarray, move: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The element of V undoing ``F^flip o tau_move``: ``tau_{-v}``, or ``F o tau_{(-v_row, v_col)}``."""
    return flip, np.stack([-move[..., 0], np.where(flip, move[..., 1], -move[..., 1])], axis=-1)


@dataclasses.dataclass
class MirrorAEGOutput(TranslationAEGOutput):
    """:class:`~fitaudit.overfit.translation.TranslationAEGOutput` plus whether g(X_i) is a mirror image.

    ``images[i]`` is ``crop(F C_i, shift_i)`` where ``flipped[i]``, else
    ``crop(C_i, shift_i)``; ``x_adv`` the canvas (flipped where
    ``flipped``) moved so that its centre crop is ``images[i]``.
    """

    flipped: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, bool))


class MirrorTranslationAEG(TranslationAEG):
    """Translational AEG whose candidates also include the mirror image of every shift (module docstring).

    Parameters as :class:`~fitaudit.overfit.translation.TranslationAEG`;
    the data are canvases ``(m, C, H + 2P, W + 2P)`` with
    ``P >= 3 eps stride``.
    """

    mirror = True

    def __repr__(self) -> str:
        return super().__repr__().replace("TranslationAEG(", "MirrorTranslationAEG(", 1)

    def fingerprint(self) -> str:
        from fitaudit.checkpoint import fingerprint

        return fingerprint("MirrorTranslationAEG", super().fingerprint())

    def _generate(self, model: Any, x: np.ndarray, y: np.ndarray) -> MirrorAEGOutput:
        canvases = check_canvases(x, margin=self.margin)
        run, flipped = self._mirror_run(model, canvases, y)
        oriented = np.where(flipped[:, None, None, None], canvases[..., ::-1], canvases)
        return self._output(MirrorAEGOutput, oriented, run, flipped=flipped)

    def _run(self, model: Any, canvases: np.ndarray, y: np.ndarray) -> _Run:
        return self._mirror_run(model, canvases, y)[0]

    def _mirror_run(
        self, model: Any, canvases: np.ndarray, y: np.ndarray
    ) -> tuple[_Run, np.ndarray]:
        """g's choices over blocks of examples: each block's canvases and their mirror images scored once."""
        model = as_classifier(model)
        n_classes = model_n_classes(model, unit_canvases(centre_crop(canvases[:1], self.margin)))
        labels = check_labels(y, "y", n_classes=n_classes, length=len(canvases))
        flips, moves = mirror_set(self.eps)
        m = len(canvases)
        drawn = None
        if not self.deterministic:  # an index into V, or len(V) for staying (random2)
            options = len(flips) + (1 if self.variant == "random2" else 0)
            drawn = check_random_state(self.random_state).integers(0, options, size=m)
        block = max(1, _BLOCK_ENTRIES // len(flips) ** 2)
        out = {
            "o": np.zeros(m, bool),
            "w": np.zeros((m, 2), np.int64),
            "mass": np.zeros(m),
            "clean": np.zeros(m),
            "adv": np.zeros(m),
            "prediction": np.zeros(m, np.int64),
        }
        evaluations = 0
        for start in range(0, m, block):
            part = slice(start, start + block)
            both = np.concatenate([canvases[part], canvases[part][..., ::-1]])
            cache = OutcomeCache(
                model,
                both,
                np.concatenate([labels[part]] * 2),
                margin=self.margin,
                reach=3 * self.eps,
                n_classes=n_classes,
                batch_size=self.batch_size,
                progress=self.progress,
                stride=self.stride,
            )
            found = _Block(cache, len(labels[part]), flips, moves, self.variant)
            o, w, mass = found.choose(None if drawn is None else drawn[part])
            out["o"][part], out["w"][part], out["mass"][part] = o, w, mass
            out["clean"][part], out["prediction"][part] = found.clean()
            out["adv"][part] = found.wrong(o, w).astype(float)
            evaluations += cache.evaluations
        run = _Run(
            self.stride * out["w"],
            out["mass"],
            out["clean"],
            out["adv"],
            out["prediction"],
            evaluations,
        )
        return run, out["o"]


class _Block:
    """One block's points ``crop(F^o C_i, w)`` read from a cache over the canvases and their mirror images."""

    def __init__(
        self, cache: OutcomeCache, m: int, flips: np.ndarray, moves: np.ndarray, variant: str
    ) -> None:
        self.cache, self.m, self.flips, self.moves, self.variant = cache, m, flips, moves, variant
        self.rows = np.arange(m)

    def _rows(self, o: np.ndarray) -> np.ndarray:
        return self.rows.reshape((-1,) + (1,) * (o.ndim - 1)) + self.m * o

    def ensure(self, o: np.ndarray, w: np.ndarray) -> None:
        self.cache.ensure_at(self._rows(o), w)

    def wrong(self, o: np.ndarray, w: np.ndarray) -> np.ndarray:
        self.ensure(o, w)
        return self.cache.lookup(w, self._rows(o))[0]

    def clean(self) -> tuple[np.ndarray, np.ndarray]:
        """L(f, X_i) and f(X_i) at the centre crops."""
        centre = np.zeros((self.m, 2), np.int64)
        self.ensure(np.zeros(self.m, bool), centre)
        return self.cache.lookup(centre, self.rows)[0].astype(float), self.cache.predicted(
            centre, self.rows
        )

    def candidates(self, o: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every candidate of the points (shape (m, n) and (m, n, 2)): (m, n, K) and (m, n, K, 2)."""
        return act(self.flips, self.moves, o[..., None], w[..., None, :])

    def choices(self, o: np.ndarray, w: np.ndarray) -> np.ndarray:
        """Index into V of the deterministic g's choice at each point (m, n); -1 = stay."""
        co, cw = self.candidates(o, w)
        self.ensure(co, cw)
        wrong_here = self.wrong(o, w)
        wrong, excess = self.cache.lookup(cw, self._rows(co))
        if self.variant == "strongest":
            score = np.where(wrong, excess, -np.inf)
        else:
            score = np.where(wrong, -np.sum(self.moves**2, axis=1).astype(float), -np.inf)
        best = np.argmax(score, axis=-1)
        return np.where(wrong.any(axis=-1) & ~wrong_here, best, -1)

    def choose(self, drawn: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """g(X_i) as a point (o, w) and n(g(X_i)) (a count, or an expected count for random/random2)."""
        o0, w0 = np.zeros((self.m, 1), bool), np.zeros((self.m, 1, 2), np.int64)
        wrong_here = self.wrong(o0, w0)[:, 0]
        if drawn is None:
            choice = self.choices(o0, w0)[:, 0]
        else:
            choice = np.where(wrong_here | (drawn >= len(self.flips)), -1, drawn)
        index = np.maximum(choice, 0)
        moved_o, moved_w = act(self.flips[index], self.moves[index], o0[:, 0], w0[:, 0])
        stay = choice < 0
        o, w = np.where(stay, False, moved_o), np.where(stay[:, None], 0, moved_w)
        back_flip, back_move = inverse(self.flips, self.moves)
        no, nw = act(
            back_flip, back_move, o[:, None], w[:, None, :]
        )  # u^{-1}(g(x)) for every u in V
        if drawn is None:
            count = np.sum(self.choices(no, nw) == np.arange(len(self.flips)), axis=1)
            return o, w, count.astype(float)
        options = len(self.flips) + (1 if self.variant == "random2" else 0)
        return o, w, np.sum(~self.wrong(no, nw), axis=1) / options
