"""Pictures of the Shapes world: the contact sheet.

:func:`contact_sheet_figure` lays out the image grid of
:func:`fitaudit.data.shapes.contact_sheet.contact_sheet_images` (rows:
classes, columns: factor sweeps and random draws) with titles;
:func:`write_contact_sheet` renders and saves it as a PNG.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit.report import new_figure, save_figure


def contact_sheet_figure(images: np.ndarray, rows: Sequence[str], columns: Sequence[str]) -> Any:
    """A figure of ``images`` (rows, cols, 3, S, S) in [0, 1] with row and column titles."""
    n_rows, n_cols = images.shape[:2]
    fig, axes = new_figure(n_rows, n_cols, figsize=(0.9 * n_cols + 1.0, 0.9 * n_rows + 0.6), squeeze=False)
    for r in range(n_rows):
        for c in range(n_cols):
            ax = axes[r, c]
            ax.imshow(images[r, c].transpose(1, 2, 0), interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(columns[c], fontsize=7)
            if c == 0:
                ax.set_ylabel(rows[r], fontsize=8)
    fig.subplots_adjust(wspace=0.05, hspace=0.05, left=0.06, right=0.99, top=0.95, bottom=0.01)
    return fig


def write_contact_sheet(path: str | os.PathLike[str], **kwargs: Any) -> dict[str, Any]:
    """Render the sheet of :func:`~fitaudit.data.shapes.contact_sheet.contact_sheet_images` as a PNG.

    Parameters
    ----------
    path : path
        The PNG to write (must end in ``.png``).
    **kwargs
        Passed to :func:`~fitaudit.data.shapes.contact_sheet.contact_sheet_images`
        (classes, sweeps, n_random, image_size, background, world_seed, random_state).

    Returns
    -------
    dict
        JSON-safe summary: ``path``, ``rows``, ``columns``, ``image_size``.
    """
    from fitaudit.data.shapes.contact_sheet import contact_sheet_images

    target = Path(path)
    if target.suffix.lower() != ".png":
        raise InputError(f"`path` must end in .png; got {str(target)!r}.")
    images, rows, columns = contact_sheet_images(**kwargs)
    save_figure(contact_sheet_figure(images, rows, columns), target, dpi=100)
    return {"path": str(target), "rows": rows, "columns": columns, "image_size": int(images.shape[-1])}
