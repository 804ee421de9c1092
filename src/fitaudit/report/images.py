"""Single images as PNG files (e.g. one Shapes render)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit.checkpoint import atomic_path


def save_image(image: Any, path: str | os.PathLike[str]) -> Path:
    """Write a channels-first image ``(C, H, W)`` with values in [0, 1] as a PNG, pixel for pixel."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    array = np.asarray(image, dtype=np.float64)
    if array.ndim != 3 or array.shape[0] not in (1, 3, 4):
        raise InputError(f"`image` must have shape (C, H, W) with C in 1, 3, 4; got {array.shape}.")
    target = Path(path)
    if target.suffix.lower() != ".png":
        raise InputError(f"`path` must end in .png; got {str(target)!r}.")
    pixels = array[0] if array.shape[0] == 1 else array.transpose(1, 2, 0)
    with atomic_path(target) as tmp:
        plt.imsave(tmp, np.clip(pixels, 0.0, 1.0), cmap="gray" if array.shape[0] == 1 else None, format="png")
    return target
