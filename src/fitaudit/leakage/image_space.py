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

Near twins are judged by the *relative distance* of a scored image x to its
nearest training image y (:func:`relative_distances`):

    r(x) = d(x, y) / d(x, z),   z the nearest training image whose content differs from y's and from z1's,

z1 being the runner-up, the nearest training image of other content than
y's. This is Lowe's ratio test (Lowe, IJCV 2004, "Distinctive image
features from scale-invariant keypoints", section 7.1), as copy detection
uses it, with the runner-up skipped: x is a twin of y when it is much
nearer to y than to anything else but possibly one image, at most
:data:`RELATIVE_THRESHOLD` (0.4) times as far. The runner-up is skipped
because a training photo often has a natural near twin of its own (an
overlapping crop of the same scene): a copy of it is then about as near
that neighbour as its source, and the plain ratio (over z1) is near 1.
A global threshold on d collapses where featureless images (sky, plain
background) are near each other anyway: on crops of real photographs
(``benchmarks/validity/leakage_images.py``) the 0.5% quantile of the
training images' own nearest distances fell between 0.007 and 0.011, below
most JPEG re-encodings and re-crops; r is small for a twin whatever the
image holds and near 1 for a clean image.

The same ratio is taken of the pixel residual e
(:mod:`fitaudit.leakage.residual`: the luminance at native resolution,
aligned over the same shifts, with a gain and an offset fitted) over the
:data:`~fitaudit.leakage.residual.CHECKED` training images nearest under d,
and a scored image is a twin when either ratio is at most the threshold,
paired with the nearest image under the distance that gave the smaller
one (:func:`nearest_twins`). The 8 x 8 view of a featureless crop (sky,
a plain wall) is the view of any other crop of the same sky; its pixels
are not: a re-crop repeats its source's pixels where they overlap, a
brightness change repeats them up to a gain. JPEG re-encodings of
featureless crops are out of reach of both: quality 75 removes the grain
that tells one sky crop from another, and the re-encoded crop is then as
near other crops of that sky as its source. The same ratio is therefore
taken of the JPEG lattice distance j (:mod:`fitaudit.leakage.jpeg_lattice`:
the scored image's 8 x 8 block DCT coefficients against each candidate's
rounded to the lattice of the scored image's likeliest JPEG quantisation
table) over the same candidates: a re-encoding's coefficients are its
source's, rounded, whatever the image holds. On the photo worlds below the
three together find and pair 71 / 75 / 74 of 75 re-crops / JPEG /
brightness twins at 0.4 (d and e: 71 / 65 / 74; d alone: 68 / 65 / 61),
6 of 3,000 clean crops flagged, the null 12.3% (12.3% without j; 12.0%
with d alone). Three of the four re-crops not paired with their source
are paired with another training crop they repeat exactly (e = 0: two
training crops a few pixels apart).

The rules compared (``benchmarks/validity/leakage_image_rules.py``,
``benchmarks/validity/results/leakage_image_rules.txt``), with d to every
training image (brute force), on five worlds of 600 training and 600 unseen
crops of scikit-image's photographs (66-pixel grey, three seeds; 32-pixel
RGB; 224-pixel grey) with 15 twins of each kind, found and paired of 75
re-crops / JPEG (quality 75) / brightness twins, clean crops flagged of
3,000, training images within the threshold (the null the verdict compares
with): the plain ratio (over z1) at 0.4: 64 / 61 / 60, 4 clean, 9.7%; with
the runner-up skipped at 0.4: 68 / 65 / 61, 6 clean, 12.0% (this rule); at
0.5: 70 / 65 / 65, 16 clean, 16.4% (not chosen: on the demo's planted
folder, two renders of each training object, each render's sibling counts
in the null and the verdict fell from ``fail`` to ``inconclusive``);
d(x, y) over y's own nearest training image of other content (a copy is
nearer its source than the source is to anything else) at 0.4: 64 / 60 /
60; a view of 16 x 16 or 32 x 32 cells instead of 8 x 8: no more JPEG
twins (61-65 where 1% of the clean crops are flagged; 65 with the 8 x 8
view). None reaches 95% (72 of 75): under d
the nearest training image of 4 re-crops, 4 JPEG and 2 brightness twins is
not their source at all (another crop of the same featureless sky, or a
crop overlapping the source), and most other twins missed are copies of
featureless crops, at the distance of other sky crops.

The nearest neighbour of a scored image is searched among the 60 training
images with the nearest spectra and, for each of 9 shifts of its view (0 or
+-2 native pixels along each axis), the 8 with the nearest *floored* views (views
over max(|v|, c0), whose Euclidean distance approximates d without gain or
shift), all found by exact search with faiss, then ranked by d. On Shapes
renders this found brute force's nearest training image (d to every
training image) for 90% of scored images at 50,000 x 50,000 and 96-99% at
10,000 x 10,000, and the same twins (unit-length unshifted views as
candidates: 68% and 77-79%; 20 by spectrum then). The images of other
content (z1 and z of r) are the nearest such candidates: z is a third
content, which 20 candidates by spectrum missed often enough on photo crops
that the search flagged 11 of the 3,000 clean crops of
``leakage_image_rules.py``'s worlds where brute force flags 6 (r of a
clean crop 0.37 instead of 0.93); with 60 the search's twins equal brute
force's on all 3,300 scored crops (40: one differs).

Measured on Shapes renders with planted twins (``benchmarks/bench_leakage.py``,
``benchmarks/results/leakage.txt``): a colour view at full resolution put
JPEG re-encodings as far from their source as different images are from
each other; a grey view confused differently coloured objects; views without
the shift search missed shifted copies; unit-length views without the
contrast floor and with colour weighted as luminance (the previous
distance) found 86% of the JPEG twins (quality 75) at 50,000 x 50,000,
missing those of small, low-contrast objects whose colours JPEG smears. The
floor's quantile (25%), the colour weight (1/2) and the gain range were
chosen on other Shapes renders (other seeds) than the benchmark's; a
trimmed error (ignoring the worst cells) and separate gains for luminance
and colour were tried there and found fewer JPEG twins.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import os
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from fitaudit._errors import InputError
from fitaudit.leakage import edits, jpeg_lattice, residual
from fitaudit.leakage.features import YCBCR, _area_weights, unit_rows
from fitaudit.leakage.resume import Checkpoints, as_checkpoints
from fitaudit.leakage.search import ExactIndex

#: side of the working image
WORK_SIZE = 32
#: side of the view compared (the working image averaged 2 x 2)
VIEW_SIZE = 8
#: largest shift tried, in pixels of the image itself (native pixels) along each axis
MAX_SHIFT = 3
#: lowest spatial frequencies kept of the spectrum, per axis and sign
SPECTRUM_SIZE = 8
#: training candidates per scored image by spectrum
CANDIDATES = 60
#: shifts, in native pixels, of the scored image's view whose nearest floored training views are candidates
SEARCH_STEPS = [(dy, dx) for dy in (-2, 0, 2) for dx in (-2, 0, 2)]
#: training candidates per scored image and search shift
SHIFT_CANDIDATES = 8
#: images per block of the feature step (a resumable unit)
FEATURE_BLOCK = 4096
#: queries per block of the search (a resumable unit)
SEARCH_BLOCK = 8192
#: queries whose candidates are ranked at a time (bounds memory)
RANK_CHUNK = 2048
#: largest gain g (and smallest 1/g) between two views: brightness or contrast changes up to 30%
MAX_GAIN = 1.3
#: the contrast floor c0 is this quantile of the training images' contrasts
FLOOR_QUANTILE = 0.25
#: weight of a chrominance cell of the view against a luminance cell (JPEG's colour noise is the larger)
CHROMA_WEIGHT = 0.5
#: a scored image is a near twin when its nearest training image is at most this share as far as the nearest
#: one of other content but the runner-up (the relative distance r, :func:`relative_distances`)
RELATIVE_THRESHOLD = 0.4
#: how the image search's default threshold is set, in words (the report's threshold row)
RELATIVE_RULE = ("fixed: the nearest training image at most 0.4 times as far (view distance d, or pixel residual e or "
                 f"JPEG lattice distance j over the {residual.CHECKED} nearest by d) as the nearest training image of "
                 "other content but one (Lowe's ratio test, the runner-up skipped)")

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
    """

    hashes: np.ndarray
    work: np.ndarray
    shape: tuple[int, ...]
    names: tuple[str, ...] | None = None
    fine: np.ndarray | None = None
    blocks: np.ndarray | None = None

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
                             None if self.blocks is None else self.blocks[rows])
        for name in ("raw_views", "spectra"):
            if name in vars(self):
                vars(part)[name] = vars(self)[name][rows]
        return part


def _features_block(array: np.ndarray) -> dict[str, np.ndarray]:
    return {"hashes": content_hashes(array), "work": working_images(array), "fine": residual.fine_images(array),
            "blocks": jpeg_lattice.block_coefficients(array)}


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
    hashes, works, fines, blocks, shape = [], [], [], [], None
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
                bar.update(len(block))
    if shape is None or not hashes:
        raise InputError(f"`{name}` holds no images.")
    return ImageFeatures(np.concatenate(hashes), np.concatenate(works), tuple(int(v) for v in shape),
                         fine=np.concatenate(fines), blocks=np.concatenate(blocks))


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


class _Reference:
    """What the search needs of the reference images, computed once per search (not per block or shift).

    Each part is computed when a block first needs it: a search whose
    blocks all come from checkpoints computes none.

    Parameters
    ----------
    features : ImageFeatures
    floor : float
        The contrast floor c0.
    """

    def __init__(self, features: ImageFeatures, floor: float) -> None:
        self.features, self.floor = features, floor

    @functools.cached_property
    def spectra(self) -> ExactIndex:
        """Exact search over the reference spectra."""
        return ExactIndex(self.features.spectra)

    @functools.cached_property
    def floored(self) -> ExactIndex:
        """Exact search over the reference views, :func:`floored`."""
        return ExactIndex(floored(self.features.raw_views, self.floor))

    @functools.cached_property
    def pixels(self) -> residual.PixelReference:
        """The reference fine images and their sums for the pixel residual e."""
        assert self.features.fine is not None  # asked only when both sets have fine images
        return residual.PixelReference(self.features.fine, residual.max_lag(self.features.shape, MAX_SHIFT))

    @functools.cached_property
    def levels(self) -> float | None:
        """Grey levels per unit of the reference images' values (:func:`levels_per_unit`)."""
        return levels_per_unit(self.features)

    @functools.cached_property
    def lattice(self) -> np.ndarray | None:
        """The reference blocks' coefficients in grey levels for the JPEG lattice distance j; None when the
        images are not on a scale of grey levels (:func:`levels_per_unit`)."""
        if self.levels is None or self.features.blocks is None:
            return None
        return jpeg_lattice.in_grey_levels(self.features.blocks, self.levels)

    @functools.cached_property
    def views(self) -> np.ndarray:
        """The reference views v in float64, shape (m, 96)."""
        return self.features.raw_views.astype(np.float64)



#: position of each search shift among the shifts of :func:`shifted_views`
_SEARCH_VIEWS = [STEPS.index(step) for step in SEARCH_STEPS]


def cell_weights(edit: edits.Edit) -> np.ndarray:
    """Per cell of the view (96), the share of its working pixels that the inverse of ``edit`` kept inside the image.

    1 everywhere for the identity and a flip; less at the border of a
    zoomed-out copy and the corners of a rotated one
    (:func:`fitaudit.leakage.edits.valid_share`).
    """
    valid = edits.valid_share(WORK_SIZE, WORK_SIZE, edit)
    half = VIEW_SIZE // 2
    luma = valid.reshape(VIEW_SIZE, WORK_SIZE // VIEW_SIZE, VIEW_SIZE, -1).mean(axis=(1, 3)).ravel()
    chroma = valid.reshape(half, WORK_SIZE // half, half, -1).mean(axis=(1, 3)).ravel()
    return np.concatenate([luma, chroma, chroma])


def edited(queries: ImageFeatures, edit: edits.Edit) -> ImageFeatures:
    """The query images under the inverse of ``edit``: working images warped; fine images flipped under a flip
    (dropped under a resampling edit); DCT blocks kept under the identity only (module :mod:`fitaudit.leakage.edits`)."""
    if edit.identity:
        return queries
    flip_only = edit.flip and edit.scale == 1.0 and not edit.angle
    fine = edits.apply(queries.fine, edit) if flip_only and queries.fine is not None else None
    return ImageFeatures(queries.hashes, edits.apply(queries.work, edit), queries.shape, queries.names, fine, None)


def _block_twins(queries: ImageFeatures, reference: _Reference, own: np.ndarray | None,
                 edit: edits.Edit = edits.IDENTITY) -> dict[str, np.ndarray]:
    """Nearest reference image of every query under d and under the pixel residual e, and each one's rival.

    ``edit``: the queries are compared under its inverse (:func:`edited`;
    each cell of d weighted by :func:`cell_weights` too).

    Candidates by spectrum and by shifted floored view, ranked by d. Every
    query's shifted views are computed once: the candidate search uses 9 of
    them, the ranking all. ``"second"`` is d to the nearest candidate whose
    content (digest) differs from both the nearest one's and the runner-up's
    (the nearest candidate of other content than the nearest one; ``inf``
    when no third content is among the candidates). When both sets have
    fine images, e (:mod:`fitaudit.leakage.residual`) is computed to the
    :data:`~fitaudit.leakage.residual.CHECKED` distinct candidates nearest
    under d: ``"residual"``, ``"residual_index"`` and ``"residual_second"``
    are the same three numbers under e (``inf`` and -1 without fine images),
    and ``"lattice"``, ``"lattice_index"`` and ``"lattice_second"`` under the
    JPEG lattice distance j (:mod:`fitaudit.leakage.jpeg_lattice`) to the
    same candidates, when both sets have blocks on a scale of grey levels.
    """
    extra, floor = (0 if own is None else 1), reference.floor
    native = (queries.shape[-2], queries.shape[-1])
    queries = edited(queries, edit)
    shifted, weights = shifted_views(queries.work, native), kept_weights(native)
    if not edit.identity:
        weights = weights * cell_weights(edit)[None]
    found = [reference.spectra.search(queries.spectra, CANDIDATES + extra)[1]]
    for view in _SEARCH_VIEWS:
        found.append(reference.floored.search(floored(shifted[:, view], floor), SHIFT_CANDIDATES + extra)[1])
    candidates = np.concatenate(found, axis=1)
    out = {name: np.full(len(queries), np.inf)
           for name in ("distance", "second", "residual", "residual_second", "lattice", "lattice_second")}
    for name in ("index", "residual_index", "lattice_index"):
        out[name] = np.full(len(queries), -1, dtype=np.int64)
    coefficients = qualities = None
    if queries.blocks is not None and reference.lattice is not None and reference.levels is not None:
        coefficients = jpeg_lattice.in_grey_levels(queries.blocks, reference.levels)
        qualities = jpeg_lattice.likely_qualities(coefficients)
    for start in range(0, len(queries), RANK_CHUNK):
        stop = min(start + RANK_CHUNK, len(queries))
        cand = candidates[start:stop]
        d = _pair_distances(shifted[start:stop].astype(np.float64), reference.views[cand], floor, weights)
        if own is not None:
            d[cand == own[start:stop, None]] = np.inf
        hashes = reference.features.hashes[cand]
        nearest, out["distance"][start:stop], out["second"][start:stop] = _nearest_and_rival(d, cand, hashes)
        out["index"][start:stop] = nearest
        checked = _nearest_candidates(d, cand, residual.CHECKED)
        checked_hashes = reference.features.hashes[np.maximum(checked, 0)]
        if queries.fine is not None and reference.features.fine is not None:
            e = residual.residuals(queries.fine[start:stop], reference.pixels, checked, MAX_GAIN)
            found_e = _nearest_and_rival(e, checked, checked_hashes)
            out["residual_index"][start:stop], out["residual"][start:stop] = found_e[0], found_e[1]
            out["residual_second"][start:stop] = found_e[2]
        if coefficients is not None and qualities is not None and reference.lattice is not None:
            j = jpeg_lattice.lattice_distances(coefficients[start:stop], reference.lattice, checked,
                                               qualities[start:stop])
            found_j = _nearest_and_rival(j, checked, checked_hashes)
            out["lattice_index"][start:stop], out["lattice"][start:stop] = found_j[0], found_j[1]
            out["lattice_second"][start:stop] = found_j[2]
    return out


def _nearest_and_rival(distance: np.ndarray, cand: np.ndarray, hashes: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per row: the nearest candidate (-1 when none is finite), its distance, and the distance to the rival.

    The rival is the nearest candidate whose content differs from both the
    nearest one's and the runner-up's (the nearest of other content than the
    nearest one, skipped with its copies); ``inf`` when there is none.
    """
    rows = np.arange(len(distance))
    best = np.argmin(distance, axis=1)
    nearest = distance[rows, best]
    index = np.where(np.isfinite(nearest), cand[rows, best], -1)
    other = np.where(hashes == hashes[rows, best][:, None], np.inf, distance)  # content other than the nearest's
    runner_up = hashes[rows, np.argmin(other, axis=1)][:, None]  # the nearest of them: skipped
    return index, nearest, np.where(hashes == runner_up, np.inf, other).min(axis=1)


def _nearest_candidates(distance: np.ndarray, cand: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` distinct candidates nearest under ``distance`` per row, nearest first; -1 past the finite ones."""
    order = np.argsort(distance, axis=1, kind="stable")
    ranked, values = np.take_along_axis(cand, order, 1), np.take_along_axis(distance, order, 1)
    by_row = np.argsort(ranked, axis=1, kind="stable")  # equal rows side by side, the nearest first
    grouped = np.take_along_axis(ranked, by_row, 1)
    repeated = np.zeros(ranked.shape, dtype=bool)
    np.put_along_axis(repeated, by_row[:, 1:], grouped[:, 1:] == grouped[:, :-1], axis=1)
    kept = ~repeated & np.isfinite(values)
    place = np.cumsum(kept, axis=1) - 1
    rows, cols = np.nonzero(kept & (place < k))
    out = np.full((len(cand), k), -1, dtype=np.int64)
    out[rows, place[rows, cols]] = ranked[rows, cols]
    return out


def relative_distances(nearest: np.ndarray, second: np.ndarray) -> np.ndarray:
    """r = d(x, y) / d(x, z): Lowe's ratio (IJCV 2004, section 7.1), the runner-up skipped (module docstring).

    ``nearest`` is d to the nearest image y, ``second`` d to z, the nearest
    image whose content differs from y's and from the runner-up's. 0 when
    both are 0 (the query is equally a copy of both); ``inf`` when no such
    z was compared (nothing tells what near means).
    """
    nearest, second = np.asarray(nearest, dtype=np.float64), np.asarray(second, dtype=np.float64)
    ratio = np.full(len(nearest), np.inf)
    known = np.isfinite(second) & (second > 0)
    ratio[known] = nearest[known] / second[known]
    ratio[(nearest == 0) & (second == 0)] = 0.0
    return ratio


def nearest_twins(
    queries: ImageFeatures,
    reference: ImageFeatures,
    *,
    floor: float,
    query_index: np.ndarray | None = None,
    progress: bool = False,
    checkpoint_dir: Checkpoints | str | os.PathLike[str] | None = None,
    step: str = "search",
    relative: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Nearest reference image of every query image under the distance d, in blocks of SEARCH_BLOCK queries.

    Parameters
    ----------
    queries, reference : ImageFeatures
    floor : float
        The contrast floor c0 (:func:`contrast_floor` of the training images).
    query_index : ndarray of int, optional
        When the queries are rows ``query_index`` of ``reference`` itself:
        every query's own row is skipped (rows with its exact content are
        not: they are the set's own duplicates, at distance 0).
    progress : bool
        A progress bar over the blocks (stderr).
    checkpoint_dir : path or Checkpoints, optional
        Keep every finished block there (:mod:`fitaudit.leakage.resume`).
    step : str
        The step's name in the checkpoints and the progress bar.
    relative : bool
        Return the relative distance r instead of d: the smaller of Lowe's
        ratio under d and under the pixel residual e (:func:`relative_distances`;
        e when both sets have fine images), with the nearest image under the
        distance that gave it.

    Returns
    -------
    distances : ndarray of float64, shape (n,)
        d to the nearest candidate (``inf`` when no candidate is left), or r with ``relative``.
    indices : ndarray of int64, shape (n,)
        Its row in ``reference`` (-1 when none).
    """
    prepared = _Reference(reference, floor)
    every = _search(queries, prepared, query_index, progress, as_checkpoints(checkpoint_dir), step, edits.IDENTITY)
    if every is None:
        return np.full(0, np.inf), np.full(0, -1, dtype=np.int64)
    if not relative:
        return every["distance"], every["index"]
    return _smallest_ratio(every)


def _search(queries: ImageFeatures, prepared: _Reference, query_index: np.ndarray | None, progress: bool,
            checkpoints: Checkpoints, step: str, edit: edits.Edit) -> dict[str, np.ndarray] | None:
    """:func:`_block_twins` of every block of queries under ``edit`` (checkpointed); None without queries."""
    found: dict[str, list[np.ndarray]] = {}
    reference = prepared.features
    reference_key = (reference.hashes, reference.shape, reference.fine is not None, reference.blocks is not None,
                     prepared.levels)
    name = step if edit.identity else f"{step} under the edits"  # one count per step; the key names the edit
    starts = range(0, len(queries), SEARCH_BLOCK)
    for start in tqdm(starts, desc=f"leakage: {name}", unit="block", disable=not progress or len(starts) < 2):
        rows = slice(start, start + SEARCH_BLOCK)
        block = queries.rows(rows)
        own = None if query_index is None else query_index[rows]
        key = (block.hashes, own, reference_key, prepared.floor, block.fine is not None, block.blocks is not None)
        done = checkpoints.block(name, key if edit.identity else (*key, edit.name),
                                 functools.partial(_block_twins, block, prepared, own, edit))
        for part, values in done.items():
            found.setdefault(part, []).append(values)
    if not found:
        return None
    return {part: np.concatenate(values) for part, values in found.items()}


def _smallest_ratio(every: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The smallest of Lowe's ratio under d, e and j per query, and the nearest image under the one that gave it."""
    ratios = np.stack([relative_distances(every[nearest], every[rival]) for nearest, rival in
                       (("distance", "second"), ("residual", "residual_second"), ("lattice", "lattice_second"))])
    indices = np.stack([every["index"], every["residual_index"], every["lattice_index"]])
    smallest = np.argmin(ratios, axis=0)  # ties go to d, then e
    columns = np.arange(ratios.shape[1])
    return ratios[smallest, columns], indices[smallest, columns]


def nearest_edited_twins(
    queries: ImageFeatures,
    reference: ImageFeatures,
    *,
    floor: float,
    searched: Sequence[edits.Edit] = (edits.IDENTITY,),
    query_index: np.ndarray | None = None,
    progress: bool = False,
    checkpoint_dir: Checkpoints | str | os.PathLike[str] | None = None,
    step: str = "search",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The relative distance r of every query under each of ``searched`` edits, the smallest kept.

    As :func:`nearest_twins` with ``relative=True``, once per edit (the
    query compared under its inverse: :mod:`fitaudit.leakage.edits`), each
    edit's ratio divided by the share of the image its inverse keeps inside
    (:func:`fitaudit.leakage.edits.kept_area`: an edit that compares less
    of the image needs proportionally more evidence); ties go to the
    earlier edit (list the identity first).

    Returns
    -------
    ratios : ndarray of float64, shape (n,)
    indices : ndarray of int64, shape (n,)
        The nearest training image under the edit and measure that gave the smallest ratio.
    edit : ndarray of int64, shape (n,)
        Its position in ``searched``.
    """
    prepared, checkpoints = _Reference(reference, floor), as_checkpoints(checkpoint_dir)
    ratios = np.full((len(searched), len(queries)), np.inf)
    indices = np.full((len(searched), len(queries)), -1, dtype=np.int64)
    for k, edit in enumerate(searched):
        every = _search(queries, prepared, query_index, progress, checkpoints, step, edit)
        if every is not None:
            ratios[k], indices[k] = _smallest_ratio(every)
            ratios[k] /= edits.kept_area(edit, WORK_SIZE)
    best = np.argmin(ratios, axis=0) if len(searched) else np.zeros(len(queries), dtype=np.int64)
    columns = np.arange(len(queries))
    return ratios[best, columns], indices[best, columns], best.astype(np.int64)


def mirror_share(train: ImageFeatures, rows: np.ndarray, floor: float) -> float:
    """Share of the training images ``rows`` that are twins of their own mirror image (:mod:`fitaudit.leakage.edits`).

    Image i is a twin of its mirror image when d of the flipped image to
    itself is at most :data:`RELATIVE_THRESHOLD` times d to its nearest
    other training image (the ratio test of :func:`relative_distances`,
    its own mirror image in the place of the nearest). On mirror-symmetric
    data (a class that looks the same mirrored) the share is high and flips
    are not searched (:data:`fitaudit.leakage.edits.MIRROR_SHARE`).
    """
    rows = np.asarray(rows, dtype=np.int64)
    if len(rows) == 0:
        return 0.0
    subset = ImageFeatures(train.hashes[rows], train.work[rows], train.shape)  # d only: no fine images, no blocks
    native = (train.shape[-2], train.shape[-1])
    flipped = shifted_views(edits.apply(subset.work, edits.FLIP), native)
    own = pair_distances(flipped, subset.raw_views[:, None], floor, native)[:, 0]
    other, _ = nearest_twins(subset, train, floor=floor, query_index=rows, step="mirror")
    return float(np.mean(relative_distances(own, other) <= RELATIVE_THRESHOLD))


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
