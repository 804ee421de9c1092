"""One helper for parallel, resumable work over joblib.

Every retraining-heavy instrument runs its units of work through
:func:`parallel_map`. Locally ``n_jobs`` chooses the number of processes;
on a Dask cluster the same code runs unchanged inside
``joblib.parallel_config(backend="dask")`` (needs the ``dask`` extra and a
``dask.distributed.Client``).

With ``checkpoint_dir`` each finished unit is written to a
:class:`~fitaudit.checkpoint.CheckpointStore` as soon as it returns (in
completion order, not item order), keyed by the fingerprint of the function
(with any arguments bound by :func:`functools.partial`) and the item, so an
interrupted run resumes without repeating finished units (at most the units
in flight are lost) and a changed function or setting never reuses them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import joblib
from tqdm.auto import tqdm

from fitaudit._errors import InputError
from fitaudit._validation import check_int
from fitaudit.checkpoint import CheckpointStore, code_fingerprint, fingerprint

T = TypeVar("T")
R = TypeVar("R")


def _run_unit(func: Callable[[Any], Any], index: int, item: Any) -> tuple[int, Any]:
    """Run one unit; the index lets results arrive in any order."""
    return index, func(item)


def check_n_jobs(n_jobs: Any, name: str = "n_jobs") -> int | None:
    """Validate ``n_jobs`` once, where it enters: None, a positive count, or -1 ... -(CPU count).

    joblib's convention: None or 1 run sequentially, a positive n uses n
    workers, -1 all cores, -2 all but one, ... A negative count past the
    machine's cores (-5 on 4 cores) would silently become 1 worker in
    joblib, so it is refused, as are 0 and non-integers.

    Parameters
    ----------
    n_jobs : Any
    name : str
        How the caller calls it in messages (``n_jobs``, ``--n-jobs``).

    Raises
    ------
    InputError
        When ``n_jobs`` is not an integer, is 0, or is below minus the CPU count.
    """
    if n_jobs is None:
        return None
    value = check_int(n_jobs, name)
    cores = joblib.cpu_count()
    if value == 0 or value < -cores:
        raise InputError(
            f"`{name}` must be a positive number of workers, or -1 (all cores) down to -{cores} "
            f"(all cores but {cores - 1}) on this machine's {cores} cores; got {value}."
        )
    return value


def parallel_map(
    func: Callable[[T], R],
    items: Iterable[T],
    *,
    n_jobs: int | None = None,
    progress: bool = False,
    desc: str | None = None,
    checkpoint_dir: str | os.PathLike[str] | None = None,
) -> list[R]:
    """Apply ``func`` to every item, in parallel, in order.

    Parameters
    ----------
    func : callable
        A picklable function of one item (a module-level function or a
        :func:`functools.partial` of one). It must be deterministic given the
        item: seeds travel inside the items (see :func:`fitaudit.random.spawn_seeds`).
    items : iterable
        Units of work. With ``checkpoint_dir`` they must be fingerprintable
        (see :func:`fitaudit.checkpoint.fingerprint`) and results JSON-safe.
    n_jobs : int or None
        joblib's convention: ``None`` or 1 sequential, -1 all cores. Inside
        ``joblib.parallel_config(backend=...)`` that backend is used.
    progress : bool
        Show a progress bar (on stderr).
    desc : str
        Label of the progress bar.
    checkpoint_dir : path, optional
        Folder of finished units; an entry is reused only when its function,
        bound arguments and item are the same, and the source of the modules
        behind the function (and of the fitaudit modules they use) too.

    Returns
    -------
    list
        ``[func(item) for item in items]``, in the order of ``items``.
    """
    n_jobs = check_n_jobs(n_jobs)
    items = list(items)
    results: list[Any] = [None] * len(items)
    pending: Sequence[int] = range(len(items))
    store = CheckpointStore(checkpoint_dir) if checkpoint_dir is not None else None
    keys: list[str] = []
    if store is not None:
        function_key = fingerprint(func, code_fingerprint(func, within="fitaudit"))  # once: it can hold large bound data
        keys = [store.key(function_key, item) for item in items]
        pending = []
        for i, key in enumerate(keys):
            if store.has(key):
                results[i] = store.load(key)
            else:
                pending.append(i)
    bar = tqdm(total=len(items), initial=len(items) - len(pending), desc=desc, disable=not progress)
    try:
        outputs = joblib.Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
            joblib.delayed(_run_unit)(func, i, items[i]) for i in pending
        )
        for i, output in outputs:
            if store is not None:
                output = store.save(keys[i], output, item=items[i])
            results[i] = output
            bar.update(1)
    finally:
        bar.close()
    return results
