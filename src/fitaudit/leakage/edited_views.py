"""The views of images under an edit's inverse, without warping the images: the first pass of the edited search.

The first pass of the search under an edit
(:func:`fitaudit.leakage.image_search._first_pass`) compares every query's
view (:func:`fitaudit.leakage.image_space.raw_view`) under the inverse of
the edit (:mod:`fitaudit.leakage.edits`), moved by a few shifts. The warp's
bilinear weights and each shift's cell means fold into one matrix on the flat
working image (:func:`view_operator`), so the views cost one product each.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from fitaudit.leakage import edits
from fitaudit.leakage.image_space import CHROMA_WEIGHT, VIEW_SIZE, WORK_SIZE, _block_means


@functools.cache
def view_operator(edit: edits.Edit, dy: float = 0.0, dx: float = 0.0) -> np.ndarray:
    """The view v of a working image under the inverse of ``edit`` and then moved by (dy, dx) working pixels, before
    its luminance is centred, as one matrix (3 x 32 x 32, 96) on the flat working image: the warp's bilinear weights
    folded into the cells' means (:func:`fitaudit.leakage.image_space.raw_view`'s cells). One product of the
    queries with it costs less than warping them (a few per cent of the first pass)."""
    basis = edits.apply(np.eye(WORK_SIZE * WORK_SIZE, dtype=np.float32).reshape(-1, WORK_SIZE, WORK_SIZE), edit)
    half = VIEW_SIZE // 2
    luma = np.einsum("ih,nhw,jw->nij", _block_means(VIEW_SIZE, dy), basis, _block_means(VIEW_SIZE, dx))
    chroma = CHROMA_WEIGHT * np.einsum("ih,nhw,jw->nij", _block_means(half, dy), basis, _block_means(half, dx))
    luma, chroma = luma.reshape(len(basis), -1), chroma.reshape(len(basis), -1)  # (pixels, cells)
    operator = np.zeros((3 * len(basis), luma.shape[1] + 2 * chroma.shape[1]), dtype=np.float32)
    operator[: len(basis), : luma.shape[1]] = luma
    for k in (1, 2):
        start = luma.shape[1] + (k - 1) * chroma.shape[1]
        operator[k * len(basis) : (k + 1) * len(basis), start : start + chroma.shape[1]] = chroma
    return operator


def edited_views(work: np.ndarray, edit: edits.Edit,
                 moves: Sequence[tuple[float, float]] = ((0.0, 0.0),)) -> np.ndarray:
    """:func:`fitaudit.leakage.image_space.raw_view` of the working images under the inverse of ``edit``, moved by
    each of ``moves`` (working pixels), without warping the images (:func:`view_operator`; equal up to rounding):
    shape (n, len(moves), 96)."""
    flat = work.reshape(len(work), -1)
    views = np.stack([flat @ view_operator(edit, dy, dx) for dy, dx in moves], axis=1)
    views[..., : VIEW_SIZE**2] -= views[..., : VIEW_SIZE**2].mean(axis=-1, keepdims=True)
    return views
