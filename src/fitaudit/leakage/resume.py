"""Resumable steps of the leakage search: finished blocks kept in a checkpoint store, and counted.

The long steps (the features of each image set, the calibration and the
search) run in blocks of rows. With a folder, every finished block is a unit
of a :class:`~fitaudit.checkpoint.CheckpointStore` (an ``.npz`` of arrays,
never pickled) under a key that fingerprints the step, the source code of
the leakage search and the modules it uses, and the block's inputs (the
images' content or files, the pipeline, the model's weights, the reference
set, the settings): a killed run loses at most the block in flight, and a
changed input, option or code is never answered from an old block.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from fitaudit.checkpoint import CheckpointStore, code_fingerprint


def _code_key() -> str:
    """Fingerprint of the code the blocks come from: all of fitaudit's source (:func:`~fitaudit.checkpoint.package_fingerprint`)."""
    return code_fingerprint()


class Checkpoints:
    """Blocks of the leakage search's long steps, kept in a folder (or nowhere) and counted per step.

    Parameters
    ----------
    folder : path, optional
        Where finished blocks are kept; ``None`` keeps nothing (every block
        is computed; the counts still say how many there were).

    Attributes
    ----------
    counts : dict
        Step name -> ``[reused, total]`` blocks so far.
    """

    def __init__(self, folder: str | os.PathLike[str] | None = None) -> None:
        self.store = None if folder is None else CheckpointStore(folder)
        self.counts: dict[str, list[int]] = {}
        self.matched = ""  # how image folders were matched to stored blocks, said in the summary
        self._code: str | None = None

    def __repr__(self) -> str:
        return f"Checkpoints({None if self.store is None else str(self.store.folder)!r})"

    def block(self, step: str, parts: tuple[Any, ...], compute: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
        """The arrays of one block of ``step`` computed from ``parts``: stored ones, or ``compute()`` stored."""
        counts = self.counts.setdefault(step, [0, 0])
        counts[1] += 1
        if self.store is None:
            return compute()
        if self._code is None:
            self._code = _code_key()
        key = self.store.key("leakage-block", step, self._code, *parts)
        if self.store.has_arrays(key):
            counts[0] += 1
            return self.store.load_arrays(key)
        arrays = {name: np.asarray(value) for name, value in compute().items()}
        self.store.save_arrays(key, arrays)
        return arrays

    @property
    def reused(self) -> int:
        """Blocks read back from the folder so far."""
        return sum(reused for reused, _ in self.counts.values())

    def summary(self) -> str | None:
        """``"Reused 9 of 16 blocks from DIR (features of --images 3 of 3, ...)."``; None without a folder or blocks.

        No blocks: a search that does not run in blocks (tabular rows, given features).
        """
        if self.store is None or not self.counts:
            return None
        total = sum(n for _, n in self.counts.values())
        steps = ", ".join(f"{step} {reused} of {n}" for step, (reused, n) in self.counts.items())
        matched = f" Image files: {self.matched}." if self.matched and self.reused else ""
        return f"Reused {self.reused} of {total} blocks from {os.fspath(self.store.folder)} ({steps}).{matched}"


def as_checkpoints(value: Checkpoints | str | os.PathLike[str] | None) -> Checkpoints:
    """``value`` itself when it is :class:`Checkpoints`, else checkpoints kept in the folder ``value`` (or none)."""
    return value if isinstance(value, Checkpoints) else Checkpoints(value)

