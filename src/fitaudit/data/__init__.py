"""Built-in data.

* :class:`GaussianMargin` -- the Gaussian-margin problem with a known
  density (Werpachowski et al., NeurIPS 2019, Sec. 4), for the synthetic
  overfitting test;
* :mod:`fitaudit.data.shapes` -- the procedural Shapes world (renders,
  datasets, free-position canvases);
* :mod:`fitaudit.data.io` -- safe loading of user data;
* :mod:`fitaudit.data.images` -- a user's image folders and CSV lists, the
  evaluation pipeline (resize, centre crop, normalise) and the canvases of
  the translational AEG, decoded in streaming batches.

Importing this package needs numpy and scipy only (no torch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fitaudit._lazy import lazy_exports

if TYPE_CHECKING:
    from fitaudit.data.gaussian_margin import GaussianMargin

__all__ = ["GaussianMargin"]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "GaussianMargin": "gaussian_margin",
    },
)
