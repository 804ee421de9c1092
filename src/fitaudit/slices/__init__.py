"""Where does the model fail? Weak slices of the scored rows (user guide: docs/slices.md).

* :func:`find_weak_slices` -- slices by each column and by pairs, searched as
  SliceLine does (Sagadeeva and Boehm, SIGMOD 2021), each tested against the
  rest (one-sided Fisher exact test), the family controlled by
  Benjamini-Hochberg, overlapping slices grouped (:class:`SliceResult`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fitaudit._lazy import lazy_exports

if TYPE_CHECKING:
    from fitaudit.slices.result import SliceResult, find_weak_slices

__all__ = ["SliceResult", "find_weak_slices"]

__getattr__, __dir__ = lazy_exports(__name__, {"SliceResult": "result", "find_weak_slices": "result"})
