"""What every reproduction shares: its mode, its clock, its checkpointed units, its files.

A reproduction is a function ``reproduce_NAME(**options)`` taking the
:class:`Options` every reproduction shares (:class:`ParallelOptions` where
its units can run in parallel) and its own, returning a
:class:`~fitaudit.results.Result` with ``experiment``, ``mode`` and
``seconds`` fields. Inside it a :class:`Run` holds the options, checks the
mode against the experiment's table of modes (quick for tests, full for the
paper's protocol), times the call, and keeps every unit of work in a
:class:`~fitaudit.checkpoint.CheckpointStore` under ``checkpoint_dir`` so
that a rerun with the same settings resumes;
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
from typing import Any, TypedDict

from fitaudit._errors import InputError
from fitaudit._validation import check_choice
from fitaudit.checkpoint import CheckpointStore
from fitaudit.results import to_jsonable


class Options(TypedDict, total=False):
    """The keyword options every reproduction takes (``fitaudit reproduce`` passes them all).

    Attributes
    ----------
    mode : str
        One of the experiment's modes: ``"quick"`` (seconds, for tests) or the
        paper's protocol (``"full"``, the default); each reproduction's table
        of modes says what they run.
    checkpoint_dir : path or None
        Folder of the finished units (a rerun resumes); ``None`` (the
        default) keeps nothing.
    random_state : int
        Seed of the whole experiment (default 0); each reproduction hands
        child seeds down.
    progress : bool
        Progress bars on stderr (default True).
    device : str
        Torch device the experiment's networks train and run on (default
        ``"cpu"``; ``"cuda"`` on a GPU, whose numbers differ from the CPU's in
        the last digits and are kept apart from them). An experiment that
        runs no torch model (numpy logistic models, scikit-learn) refuses
        any other device than the CPU.
    """

    mode: str
    checkpoint_dir: str | os.PathLike[str] | None
    random_state: int
    progress: bool
    device: str


class ParallelOptions(Options, total=False):
    """:class:`Options`, and ``n_jobs``: processes the units are spread over (joblib; ``None``: one).

    The numbers do not depend on it.
    """

    n_jobs: int | None


class Run:
    """One call of a reproduction: its options, its mode's settings, its clock and its checkpoints.

    Parameters
    ----------
    modes : mapping or collection of str
        The experiment's modes; a mapping gives each mode's settings
        (:attr:`settings`).
    mode, checkpoint_dir, random_state, progress, n_jobs
        The :class:`ParallelOptions` of the call (``mode`` must be one of
        ``modes``: an :class:`InputError` otherwise).
    parallel : bool
        Whether the experiment spreads its units over ``n_jobs`` processes;
        one that does not refuses an ``n_jobs`` instead of ignoring it.
    device : str
        The :class:`Options`' device; checked (:attr:`device`, as
        ``torch.device`` names it) when the experiment runs torch models.
    runs_torch : bool
        Whether it trains or runs torch models; one that does not refuses a
        device other than the CPU instead of ignoring it.
    """

    def __init__(
        self,
        modes: Mapping[str, Any] | Collection[str],
        *,
        mode: str = "full",
        checkpoint_dir: str | os.PathLike[str] | None = None,
        random_state: int = 0,
        progress: bool = True,
        n_jobs: int | None = None,
        parallel: bool = True,
        device: str = "cpu",
        runs_torch: bool = False,
    ) -> None:
        if n_jobs is not None and not parallel:
            raise InputError("`n_jobs`: this reproduction runs its units one after another; leave `n_jobs` out.")
        if runs_torch:
            from fitaudit.models.torch_adapter import resolve_device

            device = str(resolve_device(device, name="device"))
        elif device != "cpu":
            raise InputError(f"`device`: this reproduction runs no torch model, only CPU code; leave `device` out "
                             f"(got {device!r}).")
        self.started = time.perf_counter()
        self.mode = check_choice(mode, "mode", tuple(modes))
        self.settings: Any = modes[self.mode] if isinstance(modes, Mapping) else None
        self.checkpoint_dir = None if checkpoint_dir is None else Path(checkpoint_dir)
        self.random_state, self.progress, self.n_jobs, self.device = random_state, progress, n_jobs, device

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

    def unit(self, function: Callable[..., Any], *data: Any, **settings: Any) -> dict[str, Any]:
        """``function(*data, **settings)`` in JSON form, stored when the run has checkpoints.

        The key fingerprints the function (name and code), every setting
        (the mode's sizes and the seeds) and the data, so a rerun with the
        same inputs reads the stored value and any change computes anew.
        The run's ``n_jobs`` and ``progress`` are handed to the function too;
        they do not change the numbers and are not part of the key. The function's own checkpoints go to the ``fits``
        subfolder (its ``checkpoint_dir``), so a unit killed half way resumes
        from them.
        """
        store, n_jobs, progress = self.store, self.n_jobs, self.progress
        if store is None:
            return to_jsonable(function(*data, n_jobs=n_jobs, progress=progress, checkpoint_dir=None, **settings))
        return store.get_or_compute(
            store.key(function, settings, *data),
            lambda: function(*data, n_jobs=n_jobs, progress=progress, checkpoint_dir=store.subfolder("fits"), **settings),
            function=f"{function.__module__}.{function.__qualname__}",
            settings=settings,
        )

