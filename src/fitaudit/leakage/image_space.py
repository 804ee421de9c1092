"""The image feature space of the leakage search: small views compared up to a small shift.

Every image becomes a working image: its luminance and chrominance (Y, Cb,
Cr of ITU-R BT.601) area-averaged to 32 x 32 pixels. From it:

* the view: the luminance averaged to 8 x 8 and centred on its mean, beside
  the chrominance averaged to 4 x 4, scaled to unit length. Brightness and
  contrast changes scale the centred values and cancel; averaging removes
  JPEG noise (which is larger in colour: JPEG halves colour resolution,
  hence the coarser colour grid);
* the spectrum: the magnitudes of the centred luminance's 2-d Fourier
  transform (the 8 lowest frequencies per axis), unit length. Magnitudes do
  not change when an image is shifted circularly, so a shifted copy stays
  near its source.

The distance of two images x, y is the smallest distance between the view of
x shifted by up to two working pixels (1/16 of the image side; 2 pixels of a
32-pixel image) and the view of y:

    d(x, y) = min_{|dy|, |dx| <= 2} || view(shift(W_x, dy, dx)) - view(W_y) ||,

in [0, 2]. The nearest neighbour of a scored image is searched among the
``k`` training images with the nearest spectra and the ``k`` with the
nearest unshifted views (exact searches), then ranked by d. Measured on Shapes renders with planted twins (``benchmarks/bench_leakage.py``):
a colour view at full resolution put JPEG re-encodings as far from their
source as different images are from each other; a grey view confused
differently coloured objects; views without the shift search missed
shifted copies.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from collections.abc import Iterable
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit.leakage.features import _area_weights, unit_rows
from fitaudit.leakage.search import nearest

#: side of the working image
WORK_SIZE = 32
#: side of the view compared (the working image averaged 2 x 2)
VIEW_SIZE = 8
#: largest shift tried, in working pixels
MAX_SHIFT = 2
#: lowest spatial frequencies kept of the spectrum, per axis and sign
SPECTRUM_SIZE = 8
#: training candidates per scored image, by spectrum and again by view
CANDIDATES = 20

_SHIFTS = [(dy, dx) for dy in range(-MAX_SHIFT, MAX_SHIFT + 1) for dx in range(-MAX_SHIFT, MAX_SHIFT + 1)]


def content_hashes(rows: np.ndarray, dtype: Any = np.float32) -> np.ndarray:
    """A 128-bit BLAKE2b digest of every row's bytes (cast to ``dtype``): equal content, equal digest."""
    flat = np.ascontiguousarray(np.asarray(rows, dtype=dtype).reshape(len(rows), -1))
    return np.array([hashlib.blake2b(row.tobytes(), digest_size=16).digest() for row in flat], dtype="S16")


#: RGB -> (Y, Cb, Cr) of ITU-R BT.601, rows
_YCBCR = np.array([[0.299, 0.587, 0.114], [-0.169, -0.331, 0.5], [0.5, -0.419, -0.081]], dtype=np.float32)


def working_images(images: np.ndarray) -> np.ndarray:
    """Luminance and chrominance (Y, Cb, Cr) area-averaged to WORK_SIZE per side: shape (n, 3, 32, 32).

    Grey images (one channel, or any count other than 3) have their channel
    mean as luminance and zero chrominance.
    """
    array = np.asarray(images, dtype=np.float32)
    if array.shape[1] == 3:
        channels = np.einsum("kc,nchw->nkhw", _YCBCR, array)
    else:
        luma = array.mean(axis=1, keepdims=True)
        channels = np.concatenate([luma, np.zeros_like(luma), np.zeros_like(luma)], axis=1)
    rows = _area_weights(channels.shape[2], WORK_SIZE)
    cols = _area_weights(channels.shape[3], WORK_SIZE)
    return np.einsum("ih,nkhw,jw->nkij", rows, channels, cols, optimize=True).astype(np.float32)


def _block_means(cells: int, shift: int) -> np.ndarray:
    """Matrix (cells, WORK_SIZE): mean of each block of the working axis shifted by ``shift`` (edges repeated).

    The shifted axis is ``S[y] = W[clip(y - shift, 0, WORK_SIZE - 1)]``;
    row i averages ``S`` over block i.
    """
    step = WORK_SIZE // cells
    matrix = np.zeros((cells, WORK_SIZE), dtype=np.float32)
    for i in range(cells):
        for y in range(i * step, (i + 1) * step):
            matrix[i, min(max(y - shift, 0), WORK_SIZE - 1)] += 1.0 / step
    return matrix


def _view(work: np.ndarray, dy: int = 0, dx: int = 0) -> np.ndarray:
    n = len(work)
    luma = (_block_means(VIEW_SIZE, dy) @ work[:, 0] @ _block_means(VIEW_SIZE, dx).T).reshape(n, -1)
    half = VIEW_SIZE // 2
    chroma = _block_means(half, dy) @ work[:, 1:] @ _block_means(half, dx).T
    return unit_rows(np.concatenate([luma - luma.mean(axis=1, keepdims=True), chroma.reshape(n, -1)], axis=1))


def view_of(work: np.ndarray) -> np.ndarray:
    """The unit-length view of working images: shape (n, 96).

    Luminance averaged 4 x 4 to 8 x 8 and centred on its mean, beside the two
    chrominance channels averaged 8 x 8 to 4 x 4, the whole scaled to unit length.
    """
    return _view(work)


def spectrum_of(work: np.ndarray) -> np.ndarray:
    """Unit-length low-frequency Fourier magnitudes of the centred luminance: shape (n, 128)."""
    luma = work[:, 0]
    magnitudes = np.abs(np.fft.rfft2(luma - luma.mean(axis=(1, 2), keepdims=True)))
    low = np.concatenate(
        [magnitudes[:, :SPECTRUM_SIZE, :SPECTRUM_SIZE], magnitudes[:, -SPECTRUM_SIZE:, :SPECTRUM_SIZE]], axis=1
    )
    return unit_rows(low.reshape(len(work), -1))


def shifted_views(work: np.ndarray) -> np.ndarray:
    """Views of the working images moved by every shift of up to MAX_SHIFT pixels: shape (n, 25, 96)."""
    return np.stack([_view(work, dy, dx) for dy, dx in _SHIFTS], axis=1)


@dataclasses.dataclass
class ImageFeatures:
    """What the leakage search keeps of a set of images (no pixels).

    Attributes
    ----------
    hashes : ndarray of bytes (S16), shape (n,)
        Digests of the decoded content (:func:`content_hashes`).
    work : ndarray of float32, shape (n, 32, 32)
        Grey working images.
    shape : tuple of int
        Shape of one image, ``(C, H, W)``.
    """

    hashes: np.ndarray
    work: np.ndarray
    shape: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.hashes)

    @functools.cached_property
    def views(self) -> np.ndarray:
        """:func:`view_of` the working images (computed once)."""
        return view_of(self.work)

    @functools.cached_property
    def spectra(self) -> np.ndarray:
        """:func:`spectrum_of` the working images (computed once)."""
        return spectrum_of(self.work)


def image_features(batches: np.ndarray | Iterable[np.ndarray], *, name: str = "images") -> ImageFeatures:
    """Digests and working images of an array of images or of an iterator of batches.

    Parameters
    ----------
    batches : ndarray of shape (n, C, H, W), or an iterable of such arrays
        Channels-first images; batches must share ``(C, H, W)``.
    name : str
        Argument name used in error messages.
    """
    parts = [batches] if isinstance(batches, np.ndarray) else batches
    hashes, works, shape = [], [], None
    for batch in parts:
        array = np.asarray(batch, dtype=np.float32)
        if array.ndim != 4:
            raise InputError(f"`{name}` must hold images of shape (n, C, H, W); got a batch of shape {array.shape}.")
        if shape is not None and array.shape[1:] != shape:
            raise InputError(f"`{name}` mixes image shapes {shape} and {array.shape[1:]}; all must match.")
        if not np.all(np.isfinite(array)):
            raise InputError(f"`{name}` must be finite; a batch holds NaN or infinite values.")
        shape = array.shape[1:]
        if len(array):
            hashes.append(content_hashes(array))
            works.append(working_images(array))
    if shape is None or not hashes:
        raise InputError(f"`{name}` holds no images.")
    return ImageFeatures(np.concatenate(hashes), np.concatenate(works), tuple(int(v) for v in shape))


def aligned_distances(query_work: np.ndarray, reference_views: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """d(query, candidate) for every query and each of its candidates: shape (n, k)."""
    shifted = shifted_views(query_work)  # (n, s, d)
    chosen = reference_views[candidates]  # (n, k, d)
    squared = (
        (shifted**2).sum(-1)[:, None, :]
        + (chosen**2).sum(-1)[:, :, None]
        - 2.0 * np.einsum("nsd,nkd->nks", shifted, chosen)
    )
    return np.sqrt(np.maximum(squared, 0.0)).min(axis=2)


def nearest_twins(
    queries: ImageFeatures,
    reference: ImageFeatures,
    *,
    query_index: np.ndarray | None = None,
    chunk: int = 4096,
    progress: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Nearest reference image of every query image under the shift-tolerant distance d.

    Parameters
    ----------
    queries, reference : ImageFeatures
    query_index : ndarray of int, optional
        When the queries are rows ``query_index`` of ``reference`` itself:
        every query's own row and rows with its exact content are skipped.
    chunk : int
        Queries per block of aligned distances.
    progress : bool
        Progress bars of the two candidate searches (stderr).

    Returns
    -------
    distances : ndarray of float64, shape (n,)
        d to the nearest candidate (``inf`` when no candidate is left).
    indices : ndarray of int64, shape (n,)
        Its row in ``reference`` (-1 when none).
    """
    extra = 0 if query_index is None else 1
    reference_views = reference.views
    _, by_spectrum = nearest(queries.spectra, reference.spectra, CANDIDATES + extra, progress=progress,
                             desc="leakage: spectra")
    _, by_view = nearest(queries.views, reference_views, CANDIDATES + extra, progress=progress, desc="leakage: views")
    candidates = np.concatenate([by_spectrum, by_view], axis=1)
    distances = np.full(len(queries), np.inf)
    indices = np.full(len(queries), -1, dtype=np.int64)
    for start in range(0, len(queries), chunk):
        stop = min(start + chunk, len(queries))
        cand = candidates[start:stop]
        d = aligned_distances(queries.work[start:stop], reference_views, cand).astype(np.float64)
        if query_index is not None:
            own = query_index[start:stop, None]
            same = (cand == own) | (reference.hashes[cand] == queries.hashes[start:stop, None])
            d[same] = np.inf
        best = np.argmin(d, axis=1)
        rows = np.arange(stop - start)
        distances[start:stop] = d[rows, best]
        indices[start:stop] = np.where(np.isfinite(d[rows, best]), cand[rows, best], -1)
    return distances, indices


def check_same_shape(scored: ImageFeatures, train: ImageFeatures, scored_name: str, train_name: str) -> None:
    """Both sets hold images of the same shape (C, H, W)."""
    if scored.shape != train.shape:
        raise InputError(
            f"`{train_name}` holds images of shape {train.shape} but `{scored_name}` of shape {scored.shape}; "
            "compare images through the same pipeline (same size and channels)."
        )


def as_features(value: Any, name: str) -> ImageFeatures:
    """``value`` itself when it already is :class:`ImageFeatures`, else :func:`image_features` of it."""
    return value if isinstance(value, ImageFeatures) else image_features(value, name=name)
