"""The JPEG lattice distance j of the image leakage search: is a scored image a JPEG re-encoding of a training image?

A JPEG file holds, for every 8 x 8 block of the luminance, the block's
discrete cosine transform (DCT) divided by a quantisation table Q and
rounded (ITU-T T.81, sections A.3.3 and F.1.1.4). Decoding multiplies back,
so the DCT coefficients of a decoded JPEG image lie on the lattice of
multiples of Q, up to the rounding of the decoded pixels to 8 bits. If a
scored image x is a training image y saved as JPEG and decoded, then x's
coefficients are y's own, rounded to Q's lattice:

    C_x ~ Q * round(C_y / Q)      (each coefficient within the pixels' rounding, about 0.3 grey levels)

while for any other training image y' they differ by whole lattice steps
wherever the two images differ by more than half a step. This holds for
featureless images too (a crop of sky), where the re-encoding removes the
grain that tells one crop from another and neither the view distance d
nor the pixel residual e can tell the source from the next crop of the
same sky: the lattice keeps which side of each half step the source's
coefficients fell on. Comparing a suspect image with a candidate re-saved
as JPEG is the forensic "JPEG ghost" (Farid, IEEE TIFS 2009, "Exposing
digital forgeries from JPEG ghosts"); here the candidate is re-quantised
in the DCT domain, without an encoder.

Definitions. The luminance (ITU-R BT.601 for three channels, as JPEG's
YCbCr; the channel mean otherwise) in grey levels 0-255, less 128, is cut
into the 8 x 8 blocks of the JPEG grid (which starts at the image's top-left
corner), at most :data:`MAX_BLOCKS` per side (spread evenly over the
image, so that they see all of it; partial blocks at the right and bottom
edges are left out: JPEG pads them with content the decoded image does not
hold), and each block's orthonormal 2-d
DCT-II is taken (JPEG's forward DCT, T.81 section A.3.3). The quantisation
tables are those of the Independent JPEG Group's library (libjpeg, used by
Pillow, OpenCV and most software): the luminance table of T.81 Annex K
(Table K.1) scaled by the quality q (:func:`quantisation_table`), for q in
:data:`QUALITIES`.

1. The scored image's quality. A decoded JPEG's coefficients fit its own
   table's lattice; for each q the *lattice misfit* of x is the mean over
   x's non-trivial coefficients (|C| > 1 grey level) of
   ``(min(|C - Q round(C / Q)|, Q/2) / (Q/2))^2``: near 0 on x's own
   lattice, about 1/3 on another. The :data:`TOP_QUALITIES` qualities of
   least misfit with DC steps of their own are tried (a featureless image
   has few non-trivial coefficients, mostly DC terms, and more than one
   table fits them).
2. For a training image y and a table Q,

       j(x, y) = mean_{k in K}  ( min(|C_x,k - Q_k round(C_y,k / Q_k)|, Q_k / 2) / (Q_k / 2) )^2,

   K the coefficients where x's is non-trivial or y's rounds to a
   non-zero multiple: 0 for a re-encoding of y but for the pixels'
   rounding (measured 0.01-0.1 at quality 75), between 1/3 (errors spread
   evenly over the half step) and 1 (every one past it) for another
   image. Each error counts at most half a step, so the rare coefficient
   that the encoder's integer DCT rounds to the other side of a half step
   does not dominate. Of the tried tables, the one under which one of the
   :data:`TABLE_CANDIDATES` candidates nearest under d has the least j
   gives every candidate's j.

j is computed for the training images nearest the scored image under d
(:data:`fitaudit.leakage.residual.CHECKED`) and judged like d and e, by
Lowe's ratio with the runner-up skipped (:mod:`fitaudit.leakage.image_space`).
It sees re-encodings of the images as handed in: an image resized or
cropped off the 8-pixel grid after decoding has lost its lattice (j then
finds nothing, and d and e still apply). Quality above 95 moves
coefficients by about the pixels' rounding: such re-encodings are left to
d and e, which they barely change.
"""

from __future__ import annotations

import math

import numpy as np

from fitaudit.leakage.features import luminance

#: the luminance quantisation table of ITU-T T.81 Annex K (Table K.1), rows of the 8 x 8 block
LUMINANCE_TABLE = np.array([
    [16, 11, 10, 16, 24, 40, 51, 61],
    [12, 12, 14, 19, 26, 58, 60, 55],
    [14, 13, 16, 24, 40, 57, 69, 56],
    [14, 17, 22, 29, 51, 87, 80, 62],
    [18, 22, 37, 56, 68, 109, 103, 77],
    [24, 35, 55, 64, 81, 104, 113, 92],
    [49, 64, 78, 87, 103, 121, 120, 101],
    [72, 92, 95, 98, 112, 100, 103, 99],
], dtype=np.float64)
#: the qualities whose tables are tried
QUALITIES = np.arange(50, 96)
#: qualities of least lattice misfit tried per scored image, each with its own DC step
TOP_QUALITIES = 5
#: blocks per side compared at most (spread evenly over the image): 64 blocks in all
MAX_BLOCKS = 8
#: coefficients within this many grey levels of 0 are trivial: every lattice holds them
TRIVIAL = 1.0
#: candidates (the nearest under d) on which the tried tables are judged
TABLE_CANDIDATES = 3
#: a scored image's quality is judged on at most this many of its coefficients, the largest
FIT_COEFFICIENTS = 256
#: images (queries) compared at once
CHUNK = 256


def quantisation_table(quality: int) -> np.ndarray:
    """The IJG library's luminance table at ``quality`` (libjpeg ``jpeg_quality_scaling``): shape (8, 8).

    Scale ``s = 5000 / q`` below 50, ``200 - 2 q`` from 50; entries
    ``floor((K s + 50) / 100)`` clipped to [1, 255], K the Annex K table.
    """
    if not 1 <= quality <= 100:
        raise ValueError(f"`quality` must be in [1, 100]; got {quality}.")
    scale = 5000 / quality if quality < 50 else 200 - 2 * quality
    return np.clip(np.floor((LUMINANCE_TABLE * scale + 50) / 100), 1, 255)


#: the tables of QUALITIES, flattened in the blocks' coefficient order: shape (len(QUALITIES), 64)
TABLES = np.stack([quantisation_table(int(q)).ravel() for q in QUALITIES])


def _dct_matrix() -> np.ndarray:
    """The orthonormal 8-point DCT-II matrix D in float32: a block's coefficients are D B D^T."""
    k = np.arange(8)
    d = np.sqrt(2 / 8) * np.cos((2 * k[None, :] + 1) * k[:, None] * math.pi / 16)
    d[0] /= math.sqrt(2)
    return d.astype(np.float32)


DCT32 = _dct_matrix()


def block_coefficients(images: np.ndarray, offset: tuple[int, int] = (0, 0)) -> np.ndarray:
    """DCT coefficients of the luminance's 8 x 8 blocks, in the images' own units: shape (n, B, 64), float32.

    ``offset`` is where the JPEG grid starts inside the images (rows,
    columns): non-zero when they are a crop of the decoded file. The
    coefficients are of the luminance itself (not less 128, not scaled to
    grey levels): :func:`in_grey_levels` does both, once the value scale is
    known. Images with fewer than 8 pixels per side past the offset give
    B = 0.
    """
    luma = luminance(images)
    top, left = offset
    rows, cols = (luma.shape[1] - top) // 8, (luma.shape[2] - left) // 8
    if rows < 1 or cols < 1:
        return np.zeros((len(luma), 0, 64), dtype=np.float32)
    grid = luma[:, top : top + 8 * rows, left : left + 8 * cols].reshape(len(luma), rows, 8, cols, 8)
    kept_rows, kept_cols = _spread(rows), _spread(cols)
    blocks = grid[:, kept_rows][:, :, :, kept_cols].transpose(0, 1, 3, 2, 4)  # (n, rows, cols, 8, 8)
    coefficients = DCT32 @ blocks @ DCT32.T  # D B D^T of every block
    return np.ascontiguousarray(coefficients.reshape(len(luma), -1, 64), dtype=np.float32)


def _spread(count: int) -> np.ndarray:
    """At most MAX_BLOCKS of ``count`` block indices, evenly spaced from the first to the last."""
    return np.unique(np.linspace(0, count - 1, min(count, MAX_BLOCKS)).round().astype(np.int64))


def in_grey_levels(coefficients: np.ndarray, levels_per_unit: float) -> np.ndarray:
    """Coefficients of images in grey levels 0-255 less 128, as JPEG codes them: float32 (computed in float64).

    ``levels_per_unit`` is 255 for images in [0, 1] and 1 for images in
    [0, 255]. The level shift of 128 changes only the DC coefficient, by
    8 x 128.
    """
    out = np.asarray(coefficients, dtype=np.float64) * levels_per_unit
    out[..., 0] -= 8 * 128
    return out.astype(np.float32)


def likely_qualities(coefficients: np.ndarray, top: int = TOP_QUALITIES) -> np.ndarray:
    """Per image, the ``top`` rows of :data:`TABLES` its coefficients (grey levels) fit best: shape (n, top).

    The misfit of a table is judged on the image's :data:`FIT_COEFFICIENTS`
    largest non-trivial coefficients (fewer when it has fewer). Ties go to
    the lower quality (the coarser table, which fits no more by chance).
    Each pick has a DC step of its own: neighbouring qualities share most
    steps, and a featureless image, whose non-trivial coefficients are
    mostly the blocks' DC terms, fits all of them alike (a crop of sky
    re-saved at quality 60 fitted 93-95, 86-88 and 74-76 first).
    """
    flat = np.asarray(coefficients, dtype=np.float32).reshape(len(coefficients), -1)
    out = np.zeros((len(coefficients), top), dtype=np.int64)
    if flat.shape[1] == 0:
        return out
    kept = min(FIT_COEFFICIENTS, flat.shape[1])
    largest = np.argpartition(-np.abs(flat), kept - 1, axis=1)[:, :kept]
    inverse_steps = np.tile(1 / TABLES, (1, flat.shape[1] // 64)).astype(np.float32)  # per coefficient
    for start in range(0, len(flat), CHUNK):
        rows = largest[start : start + CHUNK]
        c = np.take_along_axis(flat[start : start + CHUNK], rows, axis=1)
        counted = (np.abs(c) > TRIVIAL).astype(np.float32)
        in_steps = c[None] * inverse_steps[:, rows]  # (tables, images, kept)
        in_steps -= np.rint(in_steps)  # signed distance to the lattice, in steps: at most a half step
        with np.errstate(invalid="ignore", divide="ignore"):
            misfit = 4 * np.einsum("tqk,tqk,qk->qt", in_steps, in_steps, counted) / counted.sum(axis=1)[:, None]
        order = np.argsort(np.nan_to_num(misfit, nan=np.inf), axis=1, kind="stable")
        out[start : start + CHUNK] = _distinct_dc_steps(order, top)
    return out


def _distinct_dc_steps(order: np.ndarray, top: int) -> np.ndarray:
    """Per row of table indices (best first), the first ``top`` whose DC steps differ from every earlier one's."""
    dc = TABLES[order, 0]
    earlier = np.tril(np.ones((order.shape[1], order.shape[1]), dtype=bool), k=-1)
    repeats = ((dc[:, :, None] == dc[:, None, :]) & earlier).any(axis=2)
    picks = np.argsort(repeats, axis=1, kind="stable")[:, :top]  # the first occurrences, in order
    return np.take_along_axis(order, picks, axis=1)


def _misfits(x: np.ndarray, y: np.ndarray, inverse_steps: np.ndarray) -> np.ndarray:
    """j of queries x (q, 1, c) to their candidates y (q, k, c) at one table each (1 / Q: (q, 1, c)): (q, k)."""
    on_lattice = np.rint(y * inverse_steps)
    counted = ~((np.abs(x) <= TRIVIAL) & (on_lattice == 0))
    error = x * inverse_steps - on_lattice  # in steps
    np.abs(error, out=error)
    np.minimum(error, 0.5, out=error)
    error *= counted
    with np.errstate(invalid="ignore", divide="ignore"):
        j = 4 * np.einsum("qkc,qkc->qk", error, error) / counted.sum(axis=2)
    j[np.isnan(j)] = np.inf  # nothing counted: nothing tells a lattice
    return j


def lattice_distances(queries: np.ndarray, reference: np.ndarray, candidates: np.ndarray,
                      qualities: np.ndarray) -> np.ndarray:
    """j of every query to its candidate reference images: shape (q, k), float64 (module docstring).

    The table is the tried one whose nearest among the first
    :data:`TABLE_CANDIDATES` candidates (the nearest under d, in the
    search) has the least j; the other candidates' j is then taken at it.

    Parameters
    ----------
    queries : ndarray, shape (q, B, 64)
        The scored images' coefficients in grey levels (:func:`in_grey_levels`).
    reference : ndarray, shape (m, B, 64)
        The training images' coefficients in grey levels.
    candidates : ndarray of int, shape (q, k)
        Rows of ``reference`` per query, nearest first; -1 where none (j is ``inf`` there).
    qualities : ndarray of int, shape (q, t)
        Rows of :data:`TABLES` tried per query (:func:`likely_qualities`).
    """
    q, k = candidates.shape
    out = np.full((q, k), np.inf)
    if q == 0 or k == 0 or queries.shape[1] == 0:
        return out
    x_all = np.asarray(queries, dtype=np.float32).reshape(q, -1)
    inverse_steps = np.tile(1 / TABLES, (1, x_all.shape[1] // 64)).astype(np.float32)
    judged = min(TABLE_CANDIDATES, k)
    for start in range(0, q, CHUNK):
        stop = min(start + CHUNK, q)
        cand = candidates[start:stop]
        x = x_all[start:stop, None]
        y = np.asarray(reference[np.maximum(cand, 0)], dtype=np.float32).reshape(stop - start, k, -1)
        chosen, fit = qualities[start:stop, 0].copy(), np.full(stop - start, np.inf)
        at_chosen = np.full((stop - start, judged), np.inf)  # the judged candidates' j at the chosen table
        for t in range(qualities.shape[1]):
            tried = qualities[start:stop, t]
            j = np.where(cand[:, :judged] >= 0, _misfits(x, y[:, :judged], inverse_steps[tried][:, None]), np.inf)
            nearest = j.min(axis=1)
            better = nearest < fit
            chosen[better], fit[better], at_chosen[better] = tried[better], nearest[better], j[better]
        out[start:stop, :judged] = at_chosen
        if k > judged:
            rest = _misfits(x, y[:, judged:], inverse_steps[chosen][:, None])
            out[start:stop, judged:] = np.where(cand[:, judged:] >= 0, rest, np.inf)
    return out
