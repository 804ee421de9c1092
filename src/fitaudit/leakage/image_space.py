"""The image feature space of the leakage search: small views compared up to a small shift and a gain.

Every image becomes a working image: its luminance and chrominance (Y, Cb,
Cr of ITU-R BT.601) area-averaged to 32 x 32 pixels. From it:

* the view v: the luminance averaged to 8 x 8 and centred on its mean,
  beside the chrominance averaged to 4 x 4 and weighted 1/2 (96 numbers).
  Averaging removes most JPEG noise; JPEG's colour noise is the larger (it
  halves colour resolution and quantises colour more coarsely: at quality
  75, 3 to 5 times the luminance's per cell of the view, measured on Shapes
  renders), hence the coarser colour grid and its smaller weight; centring
  removes brightness offsets. Its length |v| is the image's *contrast*;
* the spectrum: the magnitudes of the centred luminance's 2-d Fourier
  transform (the 8 lowest frequencies per axis), unit length. Magnitudes do
  not change when an image is shifted circularly, so a shifted copy stays
  near its source.

The distance of two images x, y compares the view of x shifted by up to
MAX_SHIFT = 3 pixels of the image itself (native pixels: ``WORK_SIZE / H`` working pixels
each, interpolated between working pixels when that is not a whole number,
so that 1-2 pixel shifts of a 28-, 44- or 224-pixel image are matched as
well as those of a 32-pixel one, and a re-crop of a photograph 1-3 pixels
away is aligned with its source; :func:`shifts`) with
the view of y scaled by a gain g (a brightness or contrast change scales the
view), relative to their contrast:

    d(x, y) = min_{|dy|, |dx| <= 2}  min_{g in [1/G, G]} || v_s - g v_y || / max(sqrt(|v_s| |v_y|), c0),

with ``v_s = v(shift(W_x, dy, dx))`` (|dy|, |dx| in native pixels; the
norms and products are over the cells the shift kept, each weighted by the
share of its pixels not filled by repeating the edge, and the luminance of
both views is centred on its mean there: :func:`kept_weights`, so an object
touching the border that a shift pushes partly out of the frame is compared
on what both images still show), ``G = MAX_GAIN`` = 1.3 (brightness
changes up to 30%) and the contrast floor ``c0``: the ``FLOOR_QUANTILE``
(25%) quantile of the contrasts of the *training* images (no labels; see
:func:`contrast_floor`). For images of ordinary contrast d is the relative
difference of the two views, so it does not depend on the value scale; for
images of little contrast (a small object on a plain background) d is the
difference relative to ``c0``, so that re-encoding noise, which is the same
size whatever the image holds, is not magnified by dividing it by a tiny
contrast. Copies and shifted copies are at 0; a brightness change that
clips no pixel is at 0.

The search in this space (the candidates, the relative distance r and its
threshold) is :mod:`fitaudit.leakage.image_search`; the measurements behind
the choices of the view, the contrast floor, the colour weight, the gain
range and the search's candidates are in ``docs/leakage-image-space.md``.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import os
from collections.abc import Iterable
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from fitaudit._errors import InputError
from fitaudit.leakage import jpeg_lattice, residual
from fitaudit.leakage.features import YCBCR, _area_weights, unit_rows
from fitaudit.leakage.resume import Checkpoints, as_checkpoints

#: side of the working image
WORK_SIZE = 32
#: side of the view compared (the working image averaged 2 x 2)
VIEW_SIZE = 8
#: largest shift tried, in pixels of the image itself (native pixels) along each axis
MAX_SHIFT = 3
#: lowest spatial frequencies kept of the spectrum, per axis and sign
SPECTRUM_SIZE = 8
#: images per block of the feature step (a resumable unit)
FEATURE_BLOCK = 4096
#: largest gain g (and smallest 1/g) between two views: brightness or contrast changes up to 30%
MAX_GAIN = 1.3
#: the contrast floor c0 is this quantile of the training images' contrasts
FLOOR_QUANTILE = 0.25
#: weight of a chrominance cell of the view against a luminance cell (JPEG's colour noise is the larger)
CHROMA_WEIGHT = 0.5

#: every shift tried, in native pixels, ordered by the vertical one
STEPS = [(dy, dx) for dy in range(-MAX_SHIFT, MAX_SHIFT + 1) for dx in range(-MAX_SHIFT, MAX_SHIFT + 1)]


def shifts(native: tuple[int, int] = (WORK_SIZE, WORK_SIZE), steps: list[tuple[int, int]] = STEPS) -> list[
        tuple[float, float]]:
    """The shifts ``steps`` (native pixels) in working pixels, for images of ``native`` = (H, W) pixels.

    One native pixel is ``WORK_SIZE / H`` working pixels vertically (and
    ``WORK_SIZE / W`` horizontally): 1 for 32-pixel images, 0.73 for 44,
    0.5 for 64, 0.14 for 224, 4 for 8.
    """
    height, width = native
    return [(dy * WORK_SIZE / height, dx * WORK_SIZE / width) for dy, dx in steps]


def content_hashes(rows: np.ndarray, dtype: Any = np.float32) -> np.ndarray:
    """A 128-bit BLAKE2b digest of every row's bytes (cast to ``dtype``): equal content, equal digest."""
    flat = np.ascontiguousarray(np.asarray(rows, dtype=dtype).reshape(len(rows), -1))
    return np.array([hashlib.blake2b(row.tobytes(), digest_size=16).digest() for row in flat], dtype="S16")


def working_images(images: np.ndarray) -> np.ndarray:
    """Luminance and chrominance (Y, Cb, Cr) area-averaged to WORK_SIZE per side: shape (n, 3, 32, 32).

    Grey images (one channel, or any count other than 3) have their channel
    mean as luminance and zero chrominance.
    """
    array = np.asarray(images, dtype=np.float32)
    if array.shape[1] == 3:
        channels = np.einsum("kc,nchw->nkhw", YCBCR, array)
    else:
        luma = array.mean(axis=1, keepdims=True)
        channels = np.concatenate([luma, np.zeros_like(luma), np.zeros_like(luma)], axis=1)
    rows = _area_weights(channels.shape[2], WORK_SIZE)
    cols = _area_weights(channels.shape[3], WORK_SIZE)
    return np.einsum("ih,nkhw,jw->nkij", rows, channels, cols, optimize=True).astype(np.float32)


def _block_means(cells: int, shift: float) -> np.ndarray:
    """Matrix (cells, WORK_SIZE): mean of each block of the working axis shifted by ``shift`` (edges repeated).

    The shifted axis is ``S[y] = W(clip(y - shift, 0, WORK_SIZE - 1))``,
    linearly interpolated between working pixels when the shift is not a
    whole number of them (a shift of 1 or 2 native pixels of an image of
    another size than 32); row i averages ``S`` over block i.
    """
    step = WORK_SIZE // cells
    matrix = np.zeros((cells, WORK_SIZE), dtype=np.float32)
    for i in range(cells):
        for y in range(i * step, (i + 1) * step):
            position = min(max(y - shift, 0.0), WORK_SIZE - 1.0)
            low = int(np.floor(position))
            fraction = position - low
            matrix[i, low] += (1.0 - fraction) / step
            if fraction:
                matrix[i, low + 1] += fraction / step
    return matrix


def raw_view(work: np.ndarray, dy: float = 0, dx: float = 0) -> np.ndarray:
    """The view v of working images moved by (dy, dx) working pixels (edges repeated): shape (n, 96).

    Luminance averaged 4 x 4 to 8 x 8 and centred on its mean, beside the two
    chrominance channels averaged 8 x 8 to 4 x 4 and weighted CHROMA_WEIGHT;
    not scaled (its length is the image's contrast).
    """
    return _views(work, [(dy, dx)])[:, 0]


def _views(work: np.ndarray, moves: list[tuple[float, float]]) -> np.ndarray:
    """:func:`raw_view` of the working images under each of ``moves``: shape (n, len(moves), 96).

    The vertical block means of a shift ``dy`` (the left product of
    ``B(dy) @ W @ B(dx).T``) are computed once for a run of shifts with that
    ``dy`` (:data:`STEPS` is ordered by ``dy``), not once per view; the
    products are evaluated in the same order either way, so every view has
    the same bits as one computed alone.
    """
    n, half = len(work), VIEW_SIZE // 2
    views = np.empty((n, len(moves), VIEW_SIZE**2 + 2 * half**2), dtype=np.float32)
    for dy, run in itertools.groupby(enumerate(moves), key=lambda item: item[1][0]):
        luma_rows = _block_means(VIEW_SIZE, dy) @ work[:, 0]
        chroma_rows = _block_means(half, dy) @ work[:, 1:]
        for i, (_, dx) in run:
            luma = (luma_rows @ _block_means(VIEW_SIZE, dx).T).reshape(n, -1)
            chroma = chroma_rows @ _block_means(half, dx).T
            views[:, i, : VIEW_SIZE**2] = luma - luma.mean(axis=1, keepdims=True)
            views[:, i, VIEW_SIZE**2 :] = CHROMA_WEIGHT * chroma.reshape(n, -1)
    return views


def floored(views: np.ndarray, floor: float) -> np.ndarray:
    """Views divided by their contrast, or by the floor c0 when that is larger: the candidate search's space.

    For two images of similar contrast above c0 the Euclidean distance of
    their floored views is close to d without the gain and the shift; for
    two below c0 it is their difference over c0, as in d.
    """
    contrasts = np.linalg.norm(views, axis=1, keepdims=True)
    return (views / np.maximum(contrasts, floor)).astype(np.float32)


def spectrum_of(work: np.ndarray) -> np.ndarray:
    """Unit-length low-frequency Fourier magnitudes of the centred luminance: shape (n, 128)."""
    luma = work[:, 0]
    magnitudes = np.abs(np.fft.rfft2(luma - luma.mean(axis=(1, 2), keepdims=True)))
    low = np.concatenate(
        [magnitudes[:, :SPECTRUM_SIZE, :SPECTRUM_SIZE], magnitudes[:, -SPECTRUM_SIZE:, :SPECTRUM_SIZE]], axis=1
    )
    return unit_rows(low.reshape(len(work), -1))


def shifted_views(work: np.ndarray, native: tuple[int, int] = (WORK_SIZE, WORK_SIZE)) -> np.ndarray:
    """Views v (not scaled) of the working images moved by every shift of :data:`STEPS`: (n, 25, 96).

    ``native`` is the images' own size (H, W): the shifts are whole native
    pixels (up to MAX_SHIFT), in working pixels :func:`shifts`.
    """
    return _views(work, shifts(native))


def contrast_floor(views: np.ndarray) -> float:
    """The contrast floor c0: the FLOOR_QUANTILE quantile of the contrasts |v| of the given (training) images.

    ``views`` are their views v (:func:`raw_view`, ``ImageFeatures.raw_views``).
    Calibrated on the training images themselves, without labels; the
    smallest positive float when a quarter of them or more are flat.
    """
    contrasts = np.linalg.norm(np.asarray(views, dtype=np.float64), axis=1)
    return max(float(np.quantile(contrasts, FLOOR_QUANTILE, method="inverted_cdf")), float(np.finfo(np.float64).tiny))


def _kept(shift: float) -> np.ndarray:
    """1 for every working pixel along an axis that a shift by ``shift`` keeps, 0 where it repeats the edge."""
    position = np.arange(WORK_SIZE) - shift
    return ((position >= 0) & (position <= WORK_SIZE - 1)).astype(np.float64)


@functools.cache
def kept_weights(native: tuple[int, int] = (WORK_SIZE, WORK_SIZE)) -> np.ndarray:
    """Weight of every cell of the view under every shift of :func:`shifts`: shape (25, 96).

    The share of the cell's working pixels that the shift kept: 1 inside
    the image, less in the strip it moved in from outside (filled by
    repeating the edge, content the other image need not share: an object
    touching the border of an 8-pixel digit loses an eighth of itself to a
    one-pixel shift). Cached per image size.
    """
    rows = []
    for dy, dx in shifts(native):
        ky, kx = _kept(dy), _kept(dx)
        luma = np.outer(ky.reshape(VIEW_SIZE, -1).mean(1), kx.reshape(VIEW_SIZE, -1).mean(1)).ravel()
        half = VIEW_SIZE // 2
        chroma = np.outer(ky.reshape(half, -1).mean(1), kx.reshape(half, -1).mean(1)).ravel()
        rows.append(np.concatenate([luma, chroma, chroma]))
    return np.array(rows)


def pair_distances(shifted: np.ndarray, views: np.ndarray, floor: float,
                   native: tuple[int, int] = (WORK_SIZE, WORK_SIZE)) -> np.ndarray:
    """d of the module docstring between shifted query views and reference views.

    Parameters
    ----------
    shifted : ndarray, shape (n, 25, d)
        Every query's view under each shift (:func:`shifted_views` with the same ``native``).
    views : ndarray, shape (n, k, d)
        The views of each query's ``k`` reference images.
    floor : float
        The contrast floor c0.
    native : (int, int)
        The images' own size (H, W).

    Returns
    -------
    ndarray of float64, shape (n, k)
    """
    return _pair_distances(shifted.astype(np.float64), views.astype(np.float64), floor, kept_weights(native))


def _pair_distances(shifted: np.ndarray, views: np.ndarray, floor: float, weights: np.ndarray) -> np.ndarray:
    """:func:`pair_distances` of float64 views, each shift's cells weighted by ``weights`` (s, d).

    Under a shift, the cells it filled by repeating the edge count by the
    share of their pixels it kept (:func:`kept_weights`), and the luminance
    of both views is centred on its weighted mean over those cells, so the
    comparison is of the part of the scene both images show. With every
    weight 1 (no shift) this is the plain distance of centred views.
    """
    luma = VIEW_SIZE**2
    w_luma = weights[:, :luma]
    total = w_luma.sum(1)  # (s,)
    sum_a = np.einsum("nsl,sl->ns", shifted[..., :luma], w_luma)  # weighted luminance sums of the queries
    sum_b = np.einsum("nkl,sl->nks", views[..., :luma], w_luma)  # and of the references, per shift
    aa = (np.einsum("nsd,sd->ns", shifted**2, weights) - sum_a**2 / total)[:, None, :]  # (n, 1, s)
    bb = np.einsum("nkd,sd->nks", views**2, weights) - sum_b**2 / total  # (n, k, s)
    np.maximum(aa, 0.0, out=aa)
    np.maximum(bb, 0.0, out=bb)
    ab = np.einsum("nsd,nkd->nks", shifted * weights[None], views) - sum_a[:, None, :] * sum_b / total
    gain = ab / np.where(bb > 0, bb, 1.0)
    np.clip(gain, 1.0 / MAX_GAIN, MAX_GAIN, out=gain)
    error = 2.0 * gain
    error *= ab
    error = np.subtract(aa, error, out=error)
    np.square(gain, out=gain)
    gain *= bb
    error += gain
    np.maximum(error, 0.0, out=error)
    np.sqrt(error, out=error)
    scale = np.multiply(aa, bb, out=ab)
    np.sqrt(scale, out=scale)
    np.sqrt(scale, out=scale)
    np.maximum(scale, floor, out=scale)
    error /= scale
    return error.min(axis=2)


@dataclasses.dataclass
class ImageFeatures:
    """What the leakage search keeps of a set of images (no pixels).

    Attributes
    ----------
    hashes : ndarray of bytes (S16), shape (n,)
        Digests of the decoded content (:func:`content_hashes`).
    work : ndarray of float32, shape (n, 3, 32, 32)
        Working images (Y, Cb, Cr).
    shape : tuple of int
        Shape of one image, ``(C, H, W)``.
    names : tuple of str, optional
        The images' files (image folders and lists), in order: the pairs name them.
    fine : ndarray of float32, shape (n, h, w), optional
        Fine images (:func:`fitaudit.leakage.residual.fine_images`): the
        pixel residual e is computed only when both sets have them.
    blocks : ndarray of float32, shape (n, B, 64), optional
        DCT coefficients of the luminance's 8 x 8 blocks on the JPEG grid
        (:func:`fitaudit.leakage.jpeg_lattice.block_coefficients`): the JPEG
        lattice distance j is computed only when both sets have them.
    grid : ndarray of int8, shape (n,), optional
        The grey levels each image's pixels sit on (:func:`level_grid`): the
        pixel residual's rounding is taken off only for images stored in
        whole levels (:func:`on_whole_levels`; none when absent).
    """

    hashes: np.ndarray
    work: np.ndarray
    shape: tuple[int, ...]
    names: tuple[str, ...] | None = None
    fine: np.ndarray | None = None
    blocks: np.ndarray | None = None
    grid: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.hashes)

    @functools.cached_property
    def raw_views(self) -> np.ndarray:
        """:func:`raw_view` of the working images (computed once)."""
        return raw_view(self.work)

    @functools.cached_property
    def spectra(self) -> np.ndarray:
        """:func:`spectrum_of` the working images (computed once)."""
        return spectrum_of(self.work)

    def rows(self, rows: slice) -> ImageFeatures:
        """The features of a run of rows; its views and spectra sliced from this set's when already computed.

        A row's view and spectrum do not depend on the other rows, and a
        slice keeps the whole set's memory layout, so the slice of this set's
        arrays has the bits the slice's own computation would give (tested);
        a search block of the scored images thus reuses the spectra the
        calibration computed. A copy in another layout (the calibration's
        subset, taken by fancy indexing) can differ in the last bit, so only
        slices are taken.
        """
        part = ImageFeatures(self.hashes[rows], self.work[rows], self.shape,
                             None if self.names is None else self.names[rows],
                             None if self.fine is None else self.fine[rows],
                             None if self.blocks is None else self.blocks[rows],
                             None if self.grid is None else self.grid[rows])
        for name in ("raw_views", "spectra"):
            if name in vars(self):
                vars(part)[name] = vars(self)[name][rows]
        return part


def _features_block(array: np.ndarray) -> dict[str, np.ndarray]:
    return {"hashes": content_hashes(array), "work": working_images(array), "fine": residual.fine_images(array),
            "blocks": jpeg_lattice.block_coefficients(array), "grid": level_grid(array)}


#: a pixel sits on a grid of grey levels when it is within this share of a level of one (float32 rounding of
#: k / 255 is about 1e-5 of a level)
LEVEL_TOLERANCE = 1e-3


def level_grid(images: np.ndarray) -> np.ndarray:
    """Per image (n, C, H, W), the grey levels every one of its pixels sits on: 2 for whole numbers (values
    0-255 stored in 8 bits), 1 for whole multiples of 1/255 (values in [0, 1] stored in 8 bits), 0 for neither
    (float renders, resized or filtered images): int8, shape (n,)."""
    flat = np.asarray(images, dtype=np.float64).reshape(len(images), -1)
    grid = np.zeros(len(images), dtype=np.int8)
    for code, levels in ((1, 255.0), (2, 1.0)):
        scaled = flat * levels
        whole = np.all(np.abs(scaled - np.rint(scaled)) <= LEVEL_TOLERANCE, axis=1) if flat.shape[1] else True
        grid[whole] = code
    return grid


def on_whole_levels(features: ImageFeatures, levels: float | None) -> np.ndarray:
    """Per image, whether its pixels sit on whole grey levels at ``levels`` per unit (:func:`levels_per_unit` of
    the set compared with: 255 for [0, 1] values, 1 for 0-255): :func:`level_grid` at least 1 for 255 and 2 for 1;
    False for every image on no scale of grey levels (``levels`` None) or whose grid is not known."""
    if levels is None or features.grid is None:
        return np.zeros(len(features), dtype=bool)
    return features.grid >= (1 if levels > 1 else 2)


def image_features(
    batches: np.ndarray | Iterable[np.ndarray],
    *,
    name: str = "images",
    checkpoint_dir: Checkpoints | str | os.PathLike[str] | None = None,
    progress: bool = False,
) -> ImageFeatures:
    """Digests and working images of an array of images or of an iterator of batches.

    Parameters
    ----------
    batches : ndarray of shape (n, C, H, W), or an iterable of such arrays
        Channels-first images; batches must share ``(C, H, W)``.
    name : str
        Argument name used in error messages (and the step's name in the checkpoints).
    checkpoint_dir : path or Checkpoints, optional
        Keep the features of every block of FEATURE_BLOCK images there,
        keyed by the images' content (:mod:`fitaudit.leakage.resume`).
    progress : bool
        A progress bar over the images (stderr).
    """
    checkpoints = as_checkpoints(checkpoint_dir)
    parts = [batches] if isinstance(batches, np.ndarray) else batches
    hashes, works, fines, blocks, grids, shape = [], [], [], [], [], None
    total = len(batches) if isinstance(batches, np.ndarray) else None
    with tqdm(desc=f"leakage: features of {name}", unit="img", total=total, disable=not progress) as bar:
        for batch in parts:
            array = np.asarray(batch, dtype=np.float32)
            if array.ndim != 4:
                raise InputError(f"`{name}` must hold images of shape (n, C, H, W); got a batch of shape {array.shape}.")
            if shape is not None and array.shape[1:] != shape:
                raise InputError(f"`{name}` mixes image shapes {shape} and {array.shape[1:]}; all must match.")
            if not np.all(np.isfinite(array)):
                raise InputError(f"`{name}` must be finite; a batch holds NaN or infinite values.")
            shape = array.shape[1:]
            for start in range(0, len(array), FEATURE_BLOCK):
                block = array[start : start + FEATURE_BLOCK]
                done = checkpoints.block(f"features of {name}", (block,), functools.partial(_features_block, block))
                hashes.append(done["hashes"])
                works.append(done["work"])
                fines.append(done["fine"])
                blocks.append(done["blocks"])
                grids.append(done["grid"])
                bar.update(len(block))
    if shape is None or not hashes:
        raise InputError(f"`{name}` holds no images.")
    return ImageFeatures(np.concatenate(hashes), np.concatenate(works), tuple(int(v) for v in shape),
                         fine=np.concatenate(fines), blocks=np.concatenate(blocks), grid=np.concatenate(grids))


def levels_per_unit(features: ImageFeatures) -> float | None:
    """Grey levels per unit of the images' values: 255 for images in [0, 1], 1 for [0, 255], None otherwise.

    Judged on the working images' luminance, like :func:`check_same_scale`:
    standardised images (negative values) or values past 255 are on no
    scale of grey levels, and the JPEG lattice distance is not computed.
    """
    if len(features) == 0:
        return None
    luminance = features.work[:, 0]
    lowest, highest = float(luminance.min()), float(luminance.max())
    if lowest < 0 or highest > 255.5:
        return None
    return 255.0 if highest <= 1.01 else 1.0


def check_same_shape(scored: ImageFeatures, train: ImageFeatures, scored_name: str, train_name: str) -> None:
    """Both sets hold images of the same shape (C, H, W)."""
    if scored.shape != train.shape:
        raise InputError(
            f"`{train_name}` holds images of shape {train.shape} but `{scored_name}` of shape {scored.shape}; "
            "compare images through the same pipeline (same size and channels)."
        )


def check_same_scale(scored: ImageFeatures, train: ImageFeatures, scored_name: str, train_name: str) -> None:
    """Both sets on one value scale: not one in [0, 1] and the other in [0, 255].

    Twins are compared value for value (a brightness gain of at most
    :data:`MAX_GAIN`), so one image on both scales is no twin of itself.
    Judged on the working images' luminance (non-negative for non-negative
    pixels, at most their largest value); standardised images (negative
    values) are not judged.
    """
    luminance = [features.work[:, 0] for features in (scored, train)]
    if len(scored) == 0 or len(train) == 0 or min(float(y.min()) for y in luminance) < 0:
        return
    highest = [float(y.max()) for y in luminance]
    if (highest[0] > 1.01) != (highest[1] > 1.01):  # 1.01: a white [0, 1] pixel's luminance rounds to about 1
        raise InputError(
            f"`{scored_name}` and `{train_name}` hold images on different value scales (their working copies' "
            f"luminance reaches {highest[0]:.3g} and {highest[1]:.3g}): give both images on one scale (e.g. [0, 1])."
        )


def as_features(value: Any, name: str, *, checkpoint_dir: Checkpoints | str | os.PathLike[str] | None = None,
                progress: bool = False) -> ImageFeatures:
    """``value`` itself when it already is :class:`ImageFeatures`, else :func:`image_features` of it."""
    if isinstance(value, ImageFeatures):
        return value
    return image_features(value, name=name, checkpoint_dir=checkpoint_dir, progress=progress)
