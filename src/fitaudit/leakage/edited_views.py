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
def view_operator(edit: edits.Edit, dy: float = 0.0, dx: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """The view v of a working image under the inverse of ``edit`` and then moved by (dy, dx) working pixels, before
    its luminance is centred, as two matrices on the flat working image's channels: luminance (32 x 32, 64) and
    either chrominance channel (32 x 32, 16), the warp's bilinear weights folded into the cells' means
    (:func:`fitaudit.leakage.image_space.raw_view`'s cells, the chrominance weighted by CHROMA_WEIGHT). One
    product of the queries with them costs less than warping them."""
    basis = edits.apply(np.eye(WORK_SIZE * WORK_SIZE, dtype=np.float32).reshape(-1, WORK_SIZE, WORK_SIZE), edit)
    half = VIEW_SIZE // 2
    luma = np.einsum("ih,nhw,jw->nij", _block_means(VIEW_SIZE, dy), basis, _block_means(VIEW_SIZE, dx))
    chroma = CHROMA_WEIGHT * np.einsum("ih,nhw,jw->nij", _block_means(half, dy), basis, _block_means(half, dx))
    return (np.ascontiguousarray(luma.reshape(len(basis), -1), dtype=np.float32),
            np.ascontiguousarray(chroma.reshape(len(basis), -1), dtype=np.float32))


def edited_views(work: np.ndarray, edit: edits.Edit,
                 moves: Sequence[tuple[float, float]] = ((0.0, 0.0),)) -> np.ndarray:
    """:func:`fitaudit.leakage.image_space.raw_view` of the working images under the inverse of ``edit``, moved by
    each of ``moves`` (working pixels), without warping the images (:func:`view_operator`; equal up to rounding):
    shape (n, len(moves), 96)."""
    n = len(work)
    luma_pixels = work[:, 0].reshape(n, -1)
    chroma_pixels = work[:, 1:].reshape(2 * n, -1)
    views = np.empty((n, len(moves), VIEW_SIZE**2 + 2 * (VIEW_SIZE // 2) ** 2), dtype=np.float32)
    for k, (dy, dx) in enumerate(moves):
        luma, chroma = view_operator(edit, dy, dx)
        views[:, k, : VIEW_SIZE**2] = luma_pixels @ luma
        views[:, k, VIEW_SIZE**2 :] = (chroma_pixels @ chroma).reshape(n, -1)
    views[..., : VIEW_SIZE**2] -= views[..., : VIEW_SIZE**2].mean(axis=-1, keepdims=True)
    return views
