"""The pixel residual e of the image leakage search: two images compared pixel by pixel, aligned and re-lit.

The view distance d (:mod:`fitaudit.leakage.image_space`) compares 8 x 8
averages, which hides what tells a copy of a *featureless* photograph (a
crop of sky, of a plain wall) from another crop of the same sky: the
pixels. A re-crop of a photograph a few pixels away repeats its source's
pixels exactly where the two overlap, and a brightness or contrast change
repeats them up to a gain and an offset, while a different crop of the same
sky differs by the photograph's own fine grain and gradients. On crops of
scikit-image's photographs (``benchmarks/validity/leakage_image_rules.py``)
d put another sky crop nearer than the source for most of the re-crops and
brightness twins it missed; e puts the source first.

Each image is reduced to its *fine image*: its luminance (ITU-R BT.601
for three channels, the channel mean otherwise), area-averaged by the
integer factor ``f = ceil(max(H, W) / FINE_SIDE)`` (native pixels up to
:data:`FINE_SIDE` per side). For a scored image x and a training image y,

    e(x, y) = min_{|dy|, |dx| <= L}  min_{g in [1/G, G], b}  sqrt( mean_overlap (x_s - g y - b)^2 ),

the root mean square residual over the pixels both images hold at the shift
(dy, dx) (``x_s`` is x moved by it; ``L = ceil(MAX_SHIFT / f)`` fine pixels:
the shifts of d at this resolution), after the least-squares gain g (clipped
to ``G = MAX_GAIN``, as d's) and offset b. Pixels a shift brings in are not
compared (the overlap only), so new border content of a re-crop does not
count. The sums over the overlap at every shift are cross-correlations,
computed as one batched matrix product of each scored image's zero-padded
shifted copies with its candidates, and prefix sums (those of the training
images once per search: :class:`PixelReference`), in float64; the tests
compare it with the same formula written as a plain loop.

e is compared only with the training images nearest the scored image under
d (:data:`CHECKED`), and judged like d, by Lowe's ratio with the runner-up
skipped (:func:`fitaudit.leakage.image_search.relative_distances`), of e
less the rounding to whole grey levels that every stored image carries
(:func:`beyond_rounding`: a contrast change of a plain crop is otherwise
as near other crops of it as its rounding).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from fitaudit.leakage.features import luminance

#: largest side of a fine image: larger images are area-averaged by an integer factor
FINE_SIDE = 96
#: training images, nearest under d, whose pixel residual e a scored image is compared with
CHECKED = 12
#: e at most this share of the scored image's own spread is 0: the pixels repeat exactly and only the order of
#: float64 sums differs (about 1e-8 of the spread), so that a crop two training images both hold exactly is
#: paired with the one nearer under d whatever the machine's summation order
EXACT = 1e-6
#: float64 numbers of the shifted query copies held at once (a query chunk's; 32 MB)
CHUNK_ELEMENTS = 2**22
#: the variance, in grey levels squared, of rounding to whole grey levels (a uniform error of at most half a level)
ROUNDING_VARIANCE = 1 / 12

def fine_factor(shape: tuple[int, ...]) -> int:
    """The area-averaging factor f of images of shape (C, H, W): ``ceil(max(H, W) / FINE_SIDE)``."""
    return max(1, math.ceil(max(shape[-2], shape[-1]) / FINE_SIDE))


def beyond_rounding(nearest: np.ndarray, second: np.ndarray, levels: float | None,
                    rounded: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """e to the nearest image and to the rival less the rounding of the scored image to whole grey levels, in
    quadrature: ``sqrt(max(e^2 - ROUNDING_VARIANCE / levels^2, 0))`` (``levels`` grey levels per unit of the
    values; both unchanged when None, images on no scale of grey levels, where the rival's would be 0, and for
    the scored images ``rounded`` marks False: images not stored in whole grey levels,
    :func:`fitaudit.leakage.image_space.on_whole_levels`; every one is taken as rounded when None).

    A contrast or brightness change stored in whole grey levels is its
    source times a gain plus an offset, rounded: e to its source is that
    rounding alone, about 1/sqrt(12) of a level (a fine image averages
    rounding errors, which only lowers their variance), while e to another
    crop of the same plain sky is the two crops' grain, which a contrast of
    0.8 shrinks with the image. On the photo worlds of
    ``benchmarks/validity/leakage_augmented.py`` the four contrast twins
    missed (0.8x contrast of crops whose luminance spreads 3.7 grey levels,
    or 19 in colour) had e 0.23-0.28 levels to their source and 0.56-0.66
    to the rival: ratios 0.40-0.46 against the threshold 0.4; less the
    rounding, 0.05-0.06. The ranking is unchanged (the same monotone map
    of every candidate's e); where the rival too is within the rounding
    (a query any of three training contents explains to within it) nothing
    tells them apart and e is left as it was. Images whose pixels are not
    on whole levels (float renders, resized images) carry no rounding and
    are left as they are: taking it off them too flagged 2 more clean Shapes
    renders on 20,000 x 20,000 (``benchmarks/bench_leakage_sizes.py --speed
    20000``: 54 against 52 with every edit, 22 against 20 without) and gave
    1 more calibration image a twin.
    """
    if levels is None:
        return nearest, second
    floor = ROUNDING_VARIANCE / levels**2
    below = np.sqrt(np.maximum(np.square(nearest) - floor, 0.0)), np.sqrt(np.maximum(np.square(second) - floor, 0.0))
    kept = below[1] > 0
    if rounded is not None:
        kept = kept & rounded
    return np.where(kept, below[0], nearest), np.where(kept, below[1], second)


def max_lag(shape: tuple[int, ...], max_shift: int) -> int:
    """The largest shift L in fine pixels: ``max_shift`` native pixels, rounded up."""
    return math.ceil(max_shift / fine_factor(shape))


def fine_images(images: np.ndarray) -> np.ndarray:
    """Luminance area-averaged by :func:`fine_factor`: shape (n, H // f, W // f), float32.

    Trailing rows and columns that do not fill an f x f block are left out.
    """
    luma = luminance(images)
    f = fine_factor(np.shape(images)[1:])
    if f == 1:
        return np.ascontiguousarray(luma)
    n, height, width = luma.shape
    h, w = height // f, width // f
    return luma[:, : h * f, : w * f].reshape(n, h, f, w, f).mean(axis=(2, 4), dtype=np.float64).astype(np.float32)


def _box_sums(prefix: np.ndarray, lag: int, moved: bool) -> np.ndarray:
    """Sums over the overlap at every shift, from 2-d prefix sums (..., H + 1, W + 1): shape (..., 2L+1, 2L+1).

    ``moved``: the rows of the moved image x (r in [max(dy, 0), H + min(dy, 0))),
    else those of y (r - dy), per axis alike.
    """
    height, width = prefix.shape[-2] - 1, prefix.shape[-1] - 1
    steps = range(-lag, lag + 1)
    rows = [(max(s, 0), height + min(s, 0)) if moved else (max(-s, 0), height + min(-s, 0)) for s in steps]
    cols = [(max(s, 0), width + min(s, 0)) if moved else (max(-s, 0), width + min(-s, 0)) for s in steps]
    r0, r1 = (np.array(v) for v in zip(*rows))
    c0, c1 = (np.array(v) for v in zip(*cols))
    r0, r1, c0, c1 = r0[:, None], r1[:, None], c0[None, :], c1[None, :]
    return prefix[..., r1, c1] - prefix[..., r0, c1] - prefix[..., r1, c0] + prefix[..., r0, c0]


def _prefix(images: np.ndarray) -> np.ndarray:
    out = np.zeros((*images.shape[:-2], images.shape[-2] + 1, images.shape[-1] + 1))
    out[..., 1:, 1:] = images.cumsum(-2).cumsum(-1)
    return out


def _from_sums(n: np.ndarray, sx: np.ndarray, sxx: np.ndarray, sy: np.ndarray, syy: np.ndarray, sxy: np.ndarray,
               max_gain: float) -> np.ndarray:
    """The residual of the least-squares gain (clipped) and offset, minimised over shifts (the last two axes)."""
    vx = np.maximum(sxx - sx * sx / n, 0)
    vy = np.maximum(syy - sy * sy / n, 0)
    cxy = sxy - sx * sy / n
    gain = np.clip(cxy / np.where(vy > 0, vy, 1), 1 / max_gain, max_gain)
    residual = np.maximum(vx - 2 * gain * cxy + gain * gain * vy, 0) / n
    return np.sqrt(residual.reshape(*residual.shape[:-2], -1).min(-1))


class PixelReference:
    """What e needs of the reference (training) images, computed once per search.

    Parameters
    ----------
    fine : ndarray, shape (m, h, w)
        Fine images (:func:`fine_images`) of the reference images.
    lag : int
        The largest shift L, fine pixels (:func:`max_lag`).
    """

    def __init__(self, fine: np.ndarray, lag: int) -> None:
        self.fine, self.lag = fine, lag

    @functools.cached_property
    def means(self) -> np.ndarray:
        """Each fine image's mean, float64: shape (m,)."""
        return self.fine.mean(axis=(-2, -1), dtype=np.float64)

    def centred(self, rows: np.ndarray) -> np.ndarray:
        """The fine images of ``rows`` in float64, each less its mean (e does not change; the sums stay small)."""
        return self.fine[rows].astype(np.float64) - self.means[rows][..., None, None]

    @functools.cached_property
    def sums(self) -> tuple[np.ndarray, np.ndarray]:
        """Sums of y and y^2 (centred) over the overlap at every shift: two arrays (m, 2L+1, 2L+1)."""
        out = np.empty((2, len(self.fine), 2 * self.lag + 1, 2 * self.lag + 1))
        for start in range(0, len(self.fine), 1024):
            y = self.centred(np.arange(start, min(start + 1024, len(self.fine))))
            out[0, start : start + len(y)] = _box_sums(_prefix(y), self.lag, moved=False)
            out[1, start : start + len(y)] = _box_sums(_prefix(y * y), self.lag, moved=False)
        return out[0], out[1]


def _shifted_copies(x: np.ndarray, lag: int) -> np.ndarray:
    """Every shift of each image, zero where it falls outside: (q, (2L+1)^2, h * w), so that the product with y
    summed over pixels is the sum over the overlap of x[r] y[r - s]."""
    q, height, width = x.shape
    padded = np.pad(x, ((0, 0), (lag, lag), (lag, lag)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (height, width), axis=(1, 2))
    return windows.reshape(q, (2 * lag + 1) ** 2, height * width)


def residuals(queries: np.ndarray, reference: PixelReference, candidates: np.ndarray, max_gain: float) -> np.ndarray:
    """e of every query (fine image) to its candidate reference images: shape (q, k), float64.

    The sums of x y over the overlap at every shift are one batched matrix
    product of the query's shifted copies with its candidates; the sums of
    x, x^2 (per query) and y, y^2 (per reference image, once) come from
    prefix sums.

    Parameters
    ----------
    queries : ndarray, shape (q, h, w)
        Fine images (:func:`fine_images`) of the scored images.
    reference : PixelReference
        The training images' fine images and their sums.
    candidates : ndarray of int, shape (q, k)
        Rows of the reference per query; -1 where none (e is ``inf`` there).
    max_gain : float
        G: the gain is clipped to [1/G, G].
    """
    q, k = candidates.shape
    out = np.full((q, k), np.inf)
    if q == 0 or k == 0:
        return out
    lag, (height, width) = reference.lag, queries.shape[-2:]
    side = 2 * lag + 1
    steps = range(-lag, lag + 1)
    n = np.array([[(height - abs(a)) * (width - abs(b)) for b in steps] for a in steps], dtype=np.float64)
    sum_y, sum_yy = reference.sums
    chunk = max(1, CHUNK_ELEMENTS // (side * side * height * width))
    for start in range(0, q, chunk):
        stop = min(start + chunk, q)
        cand = np.maximum(candidates[start:stop], 0)
        x = queries[start:stop].astype(np.float64)
        x -= x.mean(axis=(-2, -1), keepdims=True)
        y = reference.centred(cand.ravel()).reshape(stop - start, k, height * width)
        sxy = np.matmul(_shifted_copies(x, lag), y.transpose(0, 2, 1)).transpose(0, 2, 1).reshape(-1, k, side, side)
        sx = _box_sums(_prefix(x), lag, moved=True)[:, None]
        sxx = _box_sums(_prefix(x * x), lag, moved=True)[:, None]
        e = _from_sums(n, sx, sxx, sum_y[cand], sum_yy[cand], sxy, max_gain)
        e[e <= EXACT * np.sqrt(np.mean(x * x, axis=(-2, -1)))[:, None]] = 0.0  # rounding of an exact repeat
        out[start:stop] = np.where(candidates[start:stop] >= 0, e, np.inf)
    return out

