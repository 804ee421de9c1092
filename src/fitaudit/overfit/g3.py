"""Does (G3) hold on the scored images? A classifier two-sample test on crops.

The translational overfitting test (Werpachowski, Gyorgy, Szepesvari,
NeurIPS 2019, Sec. 5 and App. B) weights its adversarial examples by
``h_g = 1 / (1 + n(x))``, which is the density ratio only under (G3):
shifting an image keeps its density, ``rho(tau_v(x)) = rho(x)``. On centred
data (MNIST, CIFAR-10) a shifted crop is an unusual image, the model errs
more on it whether or not it saw the data, and the test rejects honest test
sets.

This module checks (G3) on the scored images themselves, label-free and
model-free, with a classifier two-sample test (C2ST; Lopez-Paz & Oquab,
"Revisiting classifier two-sample tests", ICLR 2017): is a crop at one of
the AEG's offsets ``v in V_eps`` distinguishable from the centre crop?

* the images (at most :data:`MAX_IMAGES`, drawn at random) are split in two
  halves at random;
* a logistic regression is trained on the first half to tell each image's
  centre crop (class 0) from its crop at a random offset of ``V_eps``
  (class 1; of ``stride * V_eps`` for a translational AEG with a stride,
  :class:`~fitaudit.overfit.translation.TranslationAEG`), on :func:`crop_features` (a coarse grey thumbnail, and where the
  image's contents lie: their centroid and spread and the share near each
  border);
* each image of the second half gives one crop, centre or shifted by a fair
  coin, and the classifier guesses which. Under (G3) the crop's
  distribution does not depend on the coin, so every guess is right with
  probability exactly 1/2, independently: the number right is
  Binomial(n, 1/2) and the one-sided exact binomial p-value is valid for any
  classifier.

The effect size is the held-out accuracy ``a``: the best classifier's
accuracy is ``(1 + TV) / 2`` for the total-variation distance TV between the
two crop distributions, so ``2a - 1`` estimates a lower bound on how far the
shifted crops are from the centre ones.

(G3) is declared violated when the test rejects it: the one-sided exact
binomial p-value is below :data:`G3_LEVEL`. Equivalently, the accuracy's
one-sided ``1 - G3_LEVEL`` Clopper-Pearson lower bound ``low`` lies above
chance, 1/2 (the exact test and the exact interval are dual: ``P(X >= k)``
under Binomial(n, p) is ``I_p(k, n - k + 1)``, increasing in ``p``, and
``low`` solves ``I_low(k, n - k + 1) = level`` [2]). A separation the check
shows is never left to the test, however small: the importance weights
``1 / (1 + n(x))`` are the density ratio only where (G3) holds, and by how
much they are wrong where it does not is not known. Under (G3) the check
rejects with probability at most its level, whatever the images
(``tests/overfit/test_g3.py`` simulates it).

References
----------
.. [1] Werpachowski, R., Gyorgy, A., Szepesvari, C. "Detecting overfitting
       via adversarial examples", NeurIPS 2019, Sec. 5 and App. B.
.. [2] Clopper, C. J., Pearson, E. S. "The use of confidence or fiducial
       limits illustrated in the case of the binomial", Biometrika 26(4),
       1934.
.. [3] Lopez-Paz, D., Oquab, M. "Revisiting classifier two-sample tests",
       ICLR 2017.

Examples
--------
Crops of stationary noise, wrapped around (shifting keeps their
distribution exactly), do not void the test:

>>> import numpy as np
>>> from fitaudit.overfit.g3 import check_g3
>>> rng = np.random.default_rng(0)
>>> noise = np.pad(rng.random((200, 1, 8, 8)), ((0, 0), (0, 0), (3, 3), (3, 3)), mode="wrap")
>>> bool(check_g3(noise, margin=3, eps=1).violated)
False

A bright square always in the middle is told from its shifted crops:

>>> centred = np.zeros((200, 1, 14, 14))
>>> centred[:, :, 6:8, 6:8] = 1.0
>>> check = check_g3(centred, margin=3, eps=1)
>>> bool(check.violated), check.pvalue < 0.05 < 0.5 < check.low
(True, True)
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import check_float, check_int
from fitaudit.overfit.translation_grid import crop, shift_grid
from fitaudit.random import RandomState, check_random_state
from fitaudit.results import Result

#: level of the binomial test: (G3) is declared violated when its p-value is below it
G3_LEVEL = 0.05

#: images the check needs at least (two per half)
MIN_IMAGES = 4

#: images the check uses at most (a random subset of larger sets)
MAX_IMAGES = 2000

#: side of the grey thumbnail in the features
THUMBNAIL = 8

# canvases turned into features at a time (bounds memory for large images)
_CHUNK = 256


@dataclasses.dataclass(repr=False)
class G3ShiftTest(Result):
    """Result of :func:`check_g3`: can centre crops be told from shifted crops?

    Attributes
    ----------
    statistic : int
        Held-out crops whose kind (centre or shifted) the classifier guessed right.
    n_test : int
        Held-out crops (one per image of the second half).
    accuracy : float
        ``statistic / n_test``, the effect size (1/2 under (G3)).
    pvalue : float
        One-sided exact binomial p-value of ``statistic`` under Binomial(n_test, 1/2).
    low : float
        One-sided ``1 - level`` Clopper-Pearson lower bound of the accuracy
        (above 1/2 exactly when ``pvalue < level``).
    level : float
        :data:`G3_LEVEL` (or the value given).
    violated : bool
        ``pvalue < level``: the shifted crops are told from the centre crops,
        (G3) fails on these images.
    n_images : int
        Images the check used (both halves).
    eps : int
        Largest shift of the offsets tried (the AEG's ``V_eps``), in steps of ``stride``.
    stride : int
        Pixels per step of the offsets (1: the contiguous ``V_eps``).
    mirror : bool
        The other crops were drawn from the shifts and their mirror images
        (:class:`~fitaudit.overfit.mirror.MirrorTranslationAEG`'s V).
    """

    statistic: int
    n_test: int
    accuracy: float
    pvalue: float
    low: float
    level: float
    violated: bool
    n_images: int
    eps: int
    stride: int = 1
    mirror: bool = False

    def _summary_fields(self) -> list[str]:
        return ["accuracy", "pvalue", "violated", "n_test", "eps", "stride", "mirror"]

    def contradiction(self) -> str | None:
        """Where a saved check disagrees with its counts: the accuracy, p-value, bound and decision are recomputed."""
        from fitaudit.results import first_mismatch, mismatch

        if not 0 <= self.statistic <= self.n_test or self.n_test < 1:
            return f"`statistic` is {self.statistic}, but it must be a count of the {self.n_test} held-out crops"
        pvalue, low = g3_evidence(self.statistic, self.n_test, self.level)
        return first_mismatch(
            mismatch("accuracy", self.accuracy, self.statistic / self.n_test),
            mismatch("pvalue", self.pvalue, pvalue, tolerance=1e-6),
            mismatch("low", self.low, low, tolerance=1e-6),
            mismatch("violated", bool(self.violated), bool(pvalue < self.level)),
        )


def g3_evidence(right: int, n_test: int, level: float) -> tuple[float, float]:
    """The one-sided exact binomial p-value of ``right`` of ``n_test`` under chance, and the accuracy's
    one-sided ``1 - level`` Clopper-Pearson lower bound [2]."""
    from scipy.stats import beta, binomtest

    pvalue = float(binomtest(right, n_test, 0.5, alternative="greater").pvalue)
    return pvalue, float(beta.ppf(level, right, n_test - right + 1)) if right else 0.0


def _pooling(size: int, bins: int) -> np.ndarray:
    """Matrix (bins, size) averaging ``size`` pixels into ``bins`` equal-as-possible runs (bins <= size)."""
    owner = (np.arange(size) * bins) // size
    pool = (owner[None, :] == np.arange(bins)[:, None]).astype(np.float32)
    return pool / pool.sum(axis=1, keepdims=True)


def crop_features(crops: np.ndarray, *, ring: int = 1, handedness: bool = False) -> np.ndarray:
    """Features of crops ``(n, C, H, W)`` that see where an image's contents sit.

    * the grey crop averaged to a ``THUMBNAIL x THUMBNAIL`` thumbnail;
    * the contents' saliency ``s = |grey - median(grey)|`` (the median is
      the background of an object on a plain ground): its centroid
      ``(c_y, c_x)`` in ``[-1, 1]`` coordinates, their squares and product,
      its second moments about the centre, and the share of it in the outer
      ``ring`` pixels of each side.

    A shifted crop of a centred object has an off-centre centroid (its
    square grows) and more contents near one border; both are linear in
    these features. Returns float64 ``(n, t**2 + 12)``,
    ``t = min(THUMBNAIL, H, W)`` (the thumbnail first). With
    ``handedness``, one more that changes sign under a horizontal flip and
    not under a shift: the sign (``tanh(4 s)``) of the skewness s of the
    saliency's column profile about its centroid (an arrow pointing right is told from its mirror image by
    it, wherever it sits); the check of a mirror AEG needs it, as the
    others are blind to an object's handedness at a random place. It sees
    only that cue: a world whose handedness lies in finer detail can pass.
    """
    grey = crops.astype(np.float32).mean(axis=1)
    n, height, width = grey.shape
    side = min(THUMBNAIL, height, width)
    thumb = _pooling(height, side) @ grey @ _pooling(width, side).T
    flat = grey.reshape(n, -1)
    salience = np.abs(flat - np.median(flat, axis=1, keepdims=True)).reshape(n, height, width)
    mass = salience.sum(axis=(1, 2)) + 1e-12
    ys = np.linspace(-1.0, 1.0, height, dtype=np.float32)
    xs = np.linspace(-1.0, 1.0, width, dtype=np.float32)
    row_mass, col_mass = salience.sum(axis=2), salience.sum(axis=1)
    cy, cx = row_mass @ ys / mass, col_mass @ xs / mass
    myy, mxx = row_mass @ ys**2 / mass, col_mass @ xs**2 / mass
    mxy = np.einsum("nhw,h,w->n", salience, ys, xs) / mass
    r = max(1, min(ring, height // 2, width // 2))
    borders = [row_mass[:, :r].sum(1), row_mass[:, -r:].sum(1), col_mass[:, :r].sum(1), col_mass[:, -r:].sum(1)]
    shape = np.stack([cy, cx, cy**2, cx**2, cy * cx, myy, mxx, mxy, *(b / mass for b in borders)], axis=1)
    if handedness:
        spread = np.sqrt(np.maximum(mxx - cx**2, 1e-12))
        skew = ((xs[None, :] - cx[:, None]) ** 3 * col_mass).sum(axis=1) / mass / spread**3
        shape = np.concatenate([shape, np.tanh(4.0 * skew)[:, None]], axis=1)  # its sign, smoothly
    return np.concatenate([thumb.reshape(n, -1), shape], axis=1).astype(np.float64)


def _classifier() -> Any:
    """Standardised logistic regression (scikit-learn)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000))


@dataclasses.dataclass(frozen=True)
class G3Plan:
    """The draws of one check: which images, which half, which offset, which coin.

    Attributes
    ----------
    rows : ndarray of int, shape (n,)
        The images used (sorted positions in the data).
    train : ndarray of bool, shape (n,)
        In the first half (the classifier's training crops).
    shift : ndarray of int, shape (n, 2)
        The offset of each image's shifted crop in pixels, uniform on ``stride * V_eps``.
    coin : ndarray of bool, shape (n,)
        For the second half: the held-out crop is the shifted one.
    eps : int
    stride : int
    flip : ndarray of bool, shape (n,), or None
        With the mirror images among the AEG's maps: the other crop is the
        mirror image of the crop at ``shift``.
    """

    rows: np.ndarray
    train: np.ndarray
    shift: np.ndarray
    coin: np.ndarray
    eps: int
    stride: int = 1
    flip: np.ndarray | None = None


def plan_g3(m: int, *, eps: int, max_images: int = MAX_IMAGES, random_state: RandomState = 0,
            stride: int = 1, mirror: bool = False) -> G3Plan:
    """Draw a check's images, halves, offsets (``stride * V_eps``; with ``mirror``, a uniform element of
    :func:`fitaudit.overfit.mirror.mirror_set`: a shift or a flipped shift) and coins for data of ``m`` images
    (m >= 4)."""
    eps = check_int(eps, "eps", minimum=1)
    stride = check_int(stride, "stride", minimum=1)
    m = check_int(m, "m", minimum=MIN_IMAGES)
    rng = check_random_state(random_state)
    chosen = rng.permutation(m)[: check_int(max_images, "max_images", minimum=MIN_IMAGES)]
    train = np.zeros(m, dtype=bool)
    train[chosen[: len(chosen) // 2]] = True
    rows = np.sort(chosen)
    if mirror:
        from fitaudit.overfit.mirror import mirror_set

        flips, offsets = mirror_set(eps)
    else:
        flips, offsets = np.zeros(len(shift_grid(eps, include_zero=False)), bool), shift_grid(eps, include_zero=False)
    drawn = rng.integers(0, len(offsets), len(rows))
    return G3Plan(
        rows=rows, train=train[rows], shift=stride * offsets[drawn], coin=rng.random(len(rows)) < 0.5, eps=eps,
        stride=stride, flip=flips[drawn] if mirror else None,
    )


def pair_features(canvases: np.ndarray, shift: np.ndarray, *, margin: int, eps: int,
                  flip: np.ndarray | None = None) -> np.ndarray:
    """:func:`crop_features` of each canvas's centre crop and shifted crop, ``(n, 2, d)``; ``eps`` is the
    largest offset in pixels (the width of the border ring). Where ``flip``, the shifted crop's mirror image
    (``F crop(C, w)``, distributed as the AEG's ``crop(F C, w)`` over a symmetric set of shifts)."""
    handed = flip is not None
    centre = crop_features(crop(canvases, margin, np.zeros_like(shift)), ring=eps, handedness=handed)
    other = crop(canvases, margin, shift)
    if flip is not None:
        other = np.where(flip[:, None, None, None], other[..., ::-1], other)
    return np.stack([centre, crop_features(other, ring=eps, handedness=handed)], axis=1)


def decide_g3(
    plan: G3Plan, features: np.ndarray, *, kept: np.ndarray | None = None, level: float = G3_LEVEL,
) -> G3ShiftTest:
    """Train on the first half's pairs, test one crop per image of the second half.

    ``features`` are :func:`pair_features` of the plan's rows (those in
    ``kept`` only, a boolean mask over the rows, when some images could not
    be decoded).
    """
    level = check_float(level, "level", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    kept = np.ones(len(plan.rows), dtype=bool) if kept is None else kept
    train, coin = plan.train[kept], plan.coin[kept]
    n_test = int(np.sum(~train))
    if np.sum(train) < 2 or n_test < 1:
        raise InputError("the (G3) check needs at least 4 decodable images.")
    pairs = features[train]
    model = _classifier().fit(np.concatenate([pairs[:, 0], pairs[:, 1]]), np.repeat([0, 1], len(pairs)))
    held = features[~train]
    guesses = model.predict(np.where(coin[~train, None], held[:, 1], held[:, 0]))
    right = int(np.sum(guesses == coin[~train]))
    pvalue, low = g3_evidence(right, n_test, level)
    return G3ShiftTest(
        statistic=right, n_test=n_test, accuracy=right / n_test, pvalue=pvalue, low=low, level=level,
        violated=bool(pvalue < level), n_images=int(np.sum(kept)), eps=plan.eps, stride=plan.stride,
        mirror=plan.flip is not None,
    )


def check_g3(
    canvases: np.ndarray,
    *,
    margin: int,
    eps: int,
    level: float = G3_LEVEL,
    max_images: int = MAX_IMAGES,
    random_state: RandomState = 0,
    stride: int = 1,
    mirror: bool = False,
) -> G3ShiftTest:
    """The classifier two-sample test of (G3) on canvases (see the module docstring).

    Parameters
    ----------
    canvases : ndarray, shape (m, C, H + 2P, W + 2P)
        The scored images with their spare margin P (as the translational
        AEG takes them), m >= 4.
    margin : int
        P.
    eps : int
        The AEG's largest shift: offsets are drawn uniformly from ``V_eps``.
    level : float
        (G3) is violated when the check's p-value is below ``level``.
    max_images : int
        At most this many canvases (a random subset) are used.
    random_state : None, int, SeedSequence or Generator
        The subset, the halves, the offsets and the coins.
    stride : int
        The AEG's stride: offsets are drawn from ``stride * V_eps``
        (:class:`~fitaudit.overfit.translation.TranslationAEG`).
    mirror : bool
        The AEG's maps include the mirror images of its shifts
        (:class:`~fitaudit.overfit.mirror.MirrorTranslationAEG`): the other
        crop is drawn from all of them, so the flip is checked with the shifts.

    Returns
    -------
    G3ShiftTest
    """
    plan = plan_g3(len(canvases), eps=eps, max_images=max_images, random_state=random_state, stride=stride,
                   mirror=mirror)
    margin = check_int(margin, "margin", minimum=plan.eps * plan.stride)
    features = np.concatenate([
        pair_features(canvases[plan.rows[i : i + _CHUNK]], plan.shift[i : i + _CHUNK], margin=margin,
                      eps=plan.eps * plan.stride, flip=None if plan.flip is None else plan.flip[i : i + _CHUNK])
        for i in range(0, len(plan.rows), _CHUNK)
    ])
    return decide_g3(plan, features, level=level)
