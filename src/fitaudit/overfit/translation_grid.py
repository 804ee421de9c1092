"""Shift grids, crops and the cache of model outcomes at translations.

Helpers of :mod:`fitaudit.overfit.translation` (Werpachowski, Gyorgy,
Szepesvari, NeurIPS 2019, Sec. 5 and Appendix B).

Sign convention
---------------
The data are canvases of shape ``(C, H + 2P, W + 2P)``: an ``H x W`` image
with ``P`` spare pixels (the margin) on every side. The image x is the centre
crop, whose top-left corner sits at ``(P, P)``; its translation
``tau_v(x)``, ``v = (v_row, v_col)``, is the crop whose top-left corner sits
at ``(P + v_row, P + v_col)``: the crop window moves down by ``v_row`` and
right by ``v_col`` (so the picture moves up and left inside the window).
Translations compose, ``tau_u(tau_v(x)) = tau_{u+v}(x)``, and are lossless as
long as ``||v||_inf <= P``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from tqdm.auto import tqdm

from fitaudit.overfit.translation_device import CropScorer


def shift_grid(radius: int, *, include_zero: bool = True) -> np.ndarray:
    """All shifts ``v`` with ``||v||_inf <= radius`` in row-major order.

    Row-major order lists ``v_row`` ascending (top to bottom) and, within a
    row, ``v_col`` ascending (left to right); this is the tie-breaking order of
    the paper's strongest and nearest AEGs.

    Parameters
    ----------
    radius : int
        Largest coordinate magnitude.
    include_zero : bool
        Keep ``(0, 0)``; ``include_zero=False`` gives ``V_eps`` of the paper.

    Returns
    -------
    ndarray of int, shape (n, 2)
    """
    axis = np.arange(-radius, radius + 1)
    rows, cols = np.meshgrid(axis, axis, indexing="ij")
    grid = np.stack([rows.ravel(), cols.ravel()], axis=1)
    if not include_zero:
        grid = grid[np.any(grid != 0, axis=1)]
    return grid


def crop(canvases: np.ndarray, margin: int, shifts: np.ndarray) -> np.ndarray:
    """Return ``tau_{v_i}(x_i)`` for every canvas (see the module's sign convention).

    Parameters
    ----------
    canvases : ndarray, shape (m, C, H + 2P, W + 2P)
    margin : int
        P.
    shifts : ndarray of int, shape (m, 2)
        ``v_i`` with ``||v_i||_inf <= P``.

    Returns
    -------
    ndarray, shape (m, C, H, W)
    """
    shifts = np.asarray(shifts, dtype=np.int64)
    windows = crop_windows(canvases, margin)
    return windows[np.arange(len(canvases)), :, margin + shifts[:, 0], margin + shifts[:, 1]]


def shift_canvases(canvases: np.ndarray, shifts: np.ndarray) -> np.ndarray:
    """Move every canvas's content so that its centre crop becomes ``tau_{v_i}(x_i)``.

    ``out[i, :, r, c] = canvases[i, :, r + v_row, c + v_col]`` where that
    pixel exists and 0 elsewhere (only the margin loses pixels when
    ``||v_i||_inf <= P``).

    Parameters
    ----------
    canvases : ndarray, shape (m, C, H + 2P, W + 2P)
    shifts : ndarray of int, shape (m, 2)
    """
    out = np.zeros_like(canvases)
    height, width = canvases.shape[2], canvases.shape[3]
    for shift in np.unique(shifts, axis=0):
        rows = np.flatnonzero(np.all(shifts == shift, axis=1))
        dr, dc = int(shift[0]), int(shift[1])
        out[rows, :, max(0, -dr) : height - max(0, dr), max(0, -dc) : width - max(0, dc)] = (
            canvases[rows, :, max(0, dr) : height - max(0, -dr), max(0, dc) : width - max(0, -dc)]
        )
    return out


def crop_windows(canvases: np.ndarray, margin: int) -> np.ndarray:
    """Read-only view of every ``H x W`` window of the canvases.

    Indexing the result at ``[i, :, P + v_row, P + v_col]`` gives
    ``tau_v(x_i)`` of shape ``(C, H, W)``.
    """
    height = canvases.shape[2] - 2 * margin
    width = canvases.shape[3] - 2 * margin
    return sliding_window_view(canvases, (height, width), axis=(2, 3))


class OutcomeCache:
    """Model outcomes at translations ``tau_w(x_i)``, each computed at most once.

    Stores, for example i and shift w with ``||w||_inf <= reach``, whether
    ``f(tau_w(x_i)) != y_i``, the excess logit ``l_exc`` and the predicted
    class. :meth:`ensure` evaluates the model (batched across examples and
    shifts) on the pairs not yet known, through a
    :class:`~fitaudit.overfit.translation_device.CropScorer`: the canvases
    go to the model's device once and the crops are cut and scored there;
    :attr:`evaluations` counts the images scored.

    Parameters
    ----------
    model : classifier adapter
        Anything with ``.logits(x) -> (n, k)`` on float32 images (a torch
        adapter, possibly inside a
        :class:`~fitaudit.models.pipeline_classifier.PipelineClassifier`, is scored on its
        device).
    canvases : ndarray, shape (m, C, H + 2P, W + 2P)
        Floats in [0, 1] or uint8 pixels.
    labels : ndarray of int, shape (m,)
    margin : int
        P (>= reach).
    reach : int
        Largest shift magnitude that may be requested.
    n_classes : int
    batch_size : int
        Images per model call.
    progress : bool
        Show a progress bar per evaluation round.
    gather : {"index", "copy"}, optional
        How the crops are cut on a device (:class:`~fitaudit.overfit.translation_device.CropScorer`).
    stride : int
        Pixels per unit of shift: the shifts ``w`` stored, requested and
        looked up are in units of ``stride`` pixels (the crop of ``w`` sits
        ``stride * w`` pixels from the centre), so ``margin >= stride * reach``.
    """

    def __init__(
        self,
        model: Any,
        canvases: np.ndarray,
        labels: np.ndarray,
        *,
        margin: int,
        reach: int,
        n_classes: int,
        batch_size: int,
        progress: bool,
        gather: str | None = None,
        stride: int = 1,
    ) -> None:
        height, width = canvases.shape[2] - 2 * margin, canvases.shape[3] - 2 * margin
        self.scorer = CropScorer(model, canvases, height=height, width=width, gather=gather)
        self.labels = labels
        self.margin = margin
        self.reach = reach
        self.stride = stride
        self.n_classes = n_classes
        self.batch_size = batch_size
        self.progress = progress
        side = 2 * reach + 1
        shape = (len(canvases), side, side)
        self.wrong = np.zeros(shape, dtype=bool)
        self.excess = np.full(shape, np.nan)
        self.prediction = np.full(shape, -1, dtype=np.int64)
        self.known = np.zeros(shape, dtype=bool)
        self.evaluations = 0

    def ensure(self, centres: np.ndarray, radius: int) -> None:
        """Evaluate every ``tau_w(x_i)`` with ``||w - c_i||_inf <= radius`` not yet known.

        Parameters
        ----------
        centres : ndarray of int, shape (m, 2)
            ``c_i``, one per example.
        radius : int
        """
        window = shift_grid(radius)
        self.ensure_at(np.arange(len(centres))[:, None], centres[:, None, :] + window[None, :, :])

    def ensure_at(self, rows: np.ndarray, shifts: np.ndarray) -> None:
        """Evaluate ``tau_{w}(x_r)`` at explicit pairs not yet known: ``rows`` (...) and ``shifts`` (..., 2) broadcast."""
        needed = np.zeros_like(self.known)
        needed[rows, shifts[..., 0] + self.reach, shifts[..., 1] + self.reach] = True
        rows, top, left = np.nonzero(needed & ~self.known)
        starts = range(0, len(rows), self.batch_size)
        for start in tqdm(starts, desc="translations", disable=not self.progress, leave=False):
            part = slice(start, start + self.batch_size)
            i, a, b = rows[part], top[part], left[part]
            corner_row, corner_col = (self.margin + self.stride * (z - self.reach) for z in (a, b))
            self.wrong[i, a, b], self.excess[i, a, b], self.prediction[i, a, b] = self.scorer.score(
                i, corner_row, corner_col, self.labels[i], self.n_classes
            )
            self.known[i, a, b] = True
            self.evaluations += len(i)

    def lookup(self, shifts: np.ndarray, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(wrong, excess)`` at ``tau_{w}(x_i)`` for shifts of shape (m, ..., 2).

        ``rows`` (broadcast against ``shifts[..., 0]``) names the canvas of
        each shift; default: row i for ``shifts[i]``. Raises
        ``RuntimeError`` if a requested outcome was never evaluated (a bug in
        the caller's plan, never the user's fault).
        """
        if rows is None:
            rows = np.arange(len(shifts)).reshape((-1,) + (1,) * (shifts.ndim - 2))
        index = (rows, shifts[..., 0] + self.reach, shifts[..., 1] + self.reach)
        if not np.all(self.known[index]):
            raise RuntimeError("translation cache: an outcome was used before it was evaluated")
        return self.wrong[index], self.excess[index]

    def predicted(self, shifts: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """The predicted class at ``tau_{w_i}(x_i)`` for shifts of shape (m, 2) (evaluated before: see :meth:`lookup`)."""
        self.lookup(shifts, rows)
        rows = np.arange(len(shifts)) if rows is None else rows
        return self.prediction[rows, shifts[:, 0] + self.reach, shifts[:, 1] + self.reach]
