"""What every reproduction shares: its mode, its clock, its checkpointed units, its files.

A reproduction is a function ``reproduce_NAME(*, mode, checkpoint_dir,
random_state, progress, ...)`` returning a :class:`~fitaudit.results.Result`
with ``experiment``, ``mode`` and ``seconds`` fields. Inside it a
:class:`Run` checks the mode against the experiment's table of modes (quick
for tests, full for the paper's protocol), times the call, and keeps every
unit of work in a :class:`~fitaudit.checkpoint.CheckpointStore` under
``checkpoint_dir`` so that a rerun with the same settings resumes;
``fitaudit reproduce NAME`` runs one with its checkpoints in
``OUT/checkpoints`` and writes its JSON, markdown table and figure atomically
(:func:`fitaudit.report.save_reproduction`).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

from fitaudit._validation import check_choice
from fitaudit.checkpoint import CheckpointStore
from fitaudit.results import to_jsonable


class Run:
    """One call of a reproduction: its mode, its clock and its checkpoints.

    Parameters
    ----------
    mode : str
        One of ``modes`` (an :class:`InputError` otherwise).
    modes : mapping or collection of str
        The experiment's modes; a mapping gives each mode's settings
        (:attr:`settings`).
    checkpoint_dir : path, optional
        Folder of the finished units; ``None`` keeps nothing.
    """

    def __init__(
        self,
        mode: str,
        modes: Mapping[str, Any] | Collection[str],
        checkpoint_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.started = time.perf_counter()
        self.mode = check_choice(mode, "mode", tuple(modes))
        self.settings: Any = modes[self.mode] if isinstance(modes, Mapping) else None
        self.checkpoint_dir = None if checkpoint_dir is None else Path(checkpoint_dir)

    def seconds(self) -> float:
        """Wall time since the run began (less than the experiment's when it resumed)."""
        return time.perf_counter() - self.started

    @functools.cached_property
    def store(self) -> CheckpointStore | None:
        """The checkpoint store of :attr:`checkpoint_dir` (``None`` without one)."""
        return None if self.checkpoint_dir is None else CheckpointStore(self.checkpoint_dir)

    def folder(self, name: str) -> Path | None:
        """``checkpoint_dir/name`` (``None`` without a checkpoint folder)."""
        return None if self.checkpoint_dir is None else self.checkpoint_dir / name

    def unit(
        self,
        function: Callable[..., Any],
        *data: Any,
        n_jobs: int | None,
        progress: bool,
        **settings: Any,
    ) -> dict[str, Any]:
        """``function(*data, **settings)`` in JSON form, stored when the run has checkpoints.

        The key fingerprints the function (name and code), every setting
        (the mode's sizes and the seeds) and the data, so a rerun with the
        same inputs reads the stored value and any change computes anew.
        ``n_jobs`` and ``progress`` do not change the numbers and are not
        part of the key. The function's own checkpoints go to the ``fits``
        subfolder (its ``checkpoint_dir``), so a unit killed half way resumes
        from them.
        """
        store = self.store
        if store is None:
            return to_jsonable(function(*data, n_jobs=n_jobs, progress=progress, checkpoint_dir=None, **settings))
        return store.get_or_compute(
            store.key(function, settings, *data),
            lambda: function(*data, n_jobs=n_jobs, progress=progress, checkpoint_dir=store.subfolder("fits"), **settings),
            function=f"{function.__module__}.{function.__qualname__}",
            settings=settings,
        )

