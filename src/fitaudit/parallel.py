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

Work that leaves this process (other local processes, a Dask cluster) is
checked to pickle before it is sent (a live session or lock in a unit is
one line here, not a serialisation traceback and a cluster waiting
forever), and a unit that raises there ends the run with one line naming
the unit, the worker and the cause (:class:`~fitaudit._errors.WorkerError`;
an :class:`~fitaudit._errors.InputError` stays one, with the unit named).
A unit in another process runs torch with the caller's thread count: torch's
reductions round differently across thread counts, and an adaptive search
(the examiner) turns such differences into other numbers, so the same seed
gives the same numbers locally and on any cluster (:func:`_caller_threads`).
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

import joblib
from tqdm.auto import tqdm

from fitaudit._errors import FitauditError, InputError, WorkerError
from fitaudit._validation import check_int
from fitaudit.checkpoint import CheckpointStore, code_fingerprint, fingerprint
from fitaudit.models.inference.settings import (
    default_backend_applied,
    mark_default_backend_applied,
    requested_backend,
    using_backend,
)

T = TypeVar("T")
R = TypeVar("R")


def _here() -> str:
    """This process, as a unit's failure names it: host and process id."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _unit_name(index: int, item: Any, desc: str | None) -> str:
    """``unit 3 of "examine chunks" (item (3, (6, 7), 12))``, the item's text cut to 80 characters."""
    text = repr(item)
    text = text if len(text) <= 80 else text[:77] + "..."
    return f"unit {index}{f' of {desc!r}' if desc else ''} (item {text})"


def _caller_threads() -> int | None:
    """torch's thread count in this process when torch is loaded (units elsewhere take it), else None."""
    torch = sys.modules.get("torch")
    return int(torch.get_num_threads()) if torch is not None else None


@contextlib.contextmanager
def _torch_threads(threads: int | None) -> Iterator[None]:
    """Within the block torch runs ``threads`` threads (None: as it is); the count is restored after."""
    if threads is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _run_unit(
    func: Callable[[Any], Any], index: int, item: Any, backend: str | None, home: str = "", desc: str | None = None,
    threads: int | None = None,
) -> tuple[int, Any, bool]:
    """Run one unit under the caller's default inference ``backend`` (a worker process does not inherit it).

    Returns the index (results arrive in any order), the result, and whether
    a model took that backend (:func:`~fitaudit.models.inference.default_backend_applied`).
    In a process other than ``home`` (the caller's, :func:`_here`) torch runs
    the caller's ``threads``, and a failure is raised again as one line
    naming the unit, the worker and the cause.
    """
    elsewhere = _here() != home
    with using_backend(backend), _torch_threads(threads if elsewhere else None):
        try:
            result = func(item)
        except Exception as exc:
            if not elsewhere:
                raise
            where = f"{_unit_name(index, item, desc)} on worker {_here()}"
            if isinstance(exc, InputError):
                raise InputError(f"{where}: {exc}") from None
            raise WorkerError(f"{where} failed: {type(exc).__name__}: {exc}") from None
        applied = default_backend_applied()
    return index, result, applied


def _leaves_process(n_jobs: int | None) -> bool:
    """Whether joblib, as configured here, sends the units to other processes (local workers or a cluster)."""
    backend, _ = joblib.parallel.get_active_backend()
    if getattr(backend, "supports_sharedmem", False) or type(backend).__name__ == "SequentialBackend":
        return False
    return type(backend).__name__ == "DaskDistributedBackend" or joblib.effective_n_jobs(n_jobs) != 1


def check_sendable(func: Callable[[Any], Any], item: Any, desc: str | None = None) -> None:
    """``func`` and ``item`` pickle as joblib and Dask send them; else a one-line :class:`WorkerError`.

    Dask's client fails to serialise such work on its event loop and then
    waits for it forever; checked here, the run ends at once with the cause.
    """
    try:
        import cloudpickle as pickler  # what Dask and loky send functions with
    except ImportError:  # pragma: no cover - a joblib without it pickles by reference
        import pickle as pickler
    try:
        pickler.dumps((func, item))
    except Exception as exc:  # pickle raises TypeError, PicklingError, AttributeError, ...
        what = f"the units of {desc!r}" if desc else "the parallel units"
        raise WorkerError(
            f"{what} cannot be sent to other processes or a cluster: {type(exc).__name__}: {exc} (a model held as a "
            "live session, a lock or an open file cannot travel: give the model as a file, or run without "
            "--n-jobs / --dask-scheduler)."
        ) from exc


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
    keys: Sequence[str] | None = None,
    keep: Callable[[R], bool] | None = None,
    skip: Callable[[int], bool] | None = None,
    on_result: Callable[[int, R], None] | None = None,
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
    keys : sequence of str, optional
        With ``checkpoint_dir``: the units' keys, one per item, made by the
        caller (when the function binds data that its own key would hash
        whole, e.g. a task of many models keyed model by model). Default:
        the fingerprint of the function and the item, as above.
    keep : callable, optional
        ``keep(result)``: whether a computed result is written to the
        checkpoint (default: every one). A result left out is computed again
        by a rerun (e.g. a failure recorded as data).
    skip : callable, optional
        ``skip(index)``, asked just before item ``index`` is dispatched (one
        unit ahead of each worker, after the results that have arrived):
        True leaves it undone, its result ``None``. A budget that stops a
        kind of work once spent is such a hook.
    on_result : callable, optional
        ``on_result(index, result)`` in this process for every result as soon
        as it is known: first those read from the checkpoint, in item order,
        then each computed one as it arrives (before ``skip`` is asked again).

    Returns
    -------
    list
        ``[func(item) for item in items]``, in the order of ``items`` (None
        where ``skip`` left an item undone).
    """
    n_jobs = check_n_jobs(n_jobs)
    items = list(items)
    results: list[Any] = [None] * len(items)
    pending: Sequence[int] = range(len(items))
    store = CheckpointStore(checkpoint_dir) if checkpoint_dir is not None else None
    if keys is not None and (store is None or len(keys) != len(items)):
        raise InputError(f"`keys` must come with `checkpoint_dir`, one per item ({len(items)}); got {len(keys)}.")
    if store is not None:
        if keys is None:
            function_key = fingerprint(func, code_fingerprint(func))  # once: it can hold large bound data
            keys = [store.key(function_key, item) for item in items]
        pending = []
        for i, key in enumerate(keys):
            if store.has(key):
                results[i] = store.load(key)
                if on_result is not None:
                    on_result(i, results[i])
            else:
                pending.append(i)
    remote = bool(pending) and _leaves_process(n_jobs)
    if remote:
        check_sendable(func, items[pending[0]], desc)
    bar = tqdm(total=len(items), initial=len(items) - len(pending), desc=desc, disable=not progress)
    backend = requested_backend()
    home, threads = _here(), _caller_threads()

    def units() -> Iterator[Any]:
        for i in pending:
            if skip is not None and skip(i):
                bar.update(1)
                continue
            yield joblib.delayed(_run_unit)(func, i, items[i], backend, home, desc, threads)

    try:
        outputs = joblib.Parallel(
            n_jobs=n_jobs, return_as="generator_unordered", pre_dispatch="n_jobs" if skip is not None else "2 * n_jobs"
        )(units())
        for i, output, applied in outputs:
            if applied:
                mark_default_backend_applied()
            if store is not None and keys is not None and (keep is None or keep(output)):
                output = store.save(keys[i], output, item=items[i])
            results[i] = output
            if on_result is not None:
                on_result(i, output)
            bar.update(1)
    except FitauditError:
        raise
    except Exception as exc:
        if remote and type(exc).__module__.split(".")[0] in _INFRASTRUCTURE:  # a worker lost, a result unreadable
            raise WorkerError(f"{desc or 'parallel work'}: the workers could not finish it: "
                              f"{type(exc).__name__}: {exc}") from exc
        raise
    finally:
        bar.close()
    return results


#: packages whose exceptions, raised while collecting results, mean the workers failed (not a unit's own error)
_INFRASTRUCTURE = ("distributed", "joblib", "loky", "concurrent", "pickle", "_pickle", "tornado", "asyncio")


@contextlib.contextmanager
def compute_backend(dask_scheduler: Any = None) -> Iterator[Any]:
    """Run joblib work locally, or on the Dask cluster at ``dask_scheduler`` (an address or a Client).

    Inside, every :func:`fitaudit.parallel.parallel_map` (N-model retraining,
    PMV fits, examiner instances, zoo training) runs on the cluster through
    ``joblib.parallel_config(backend="dask")``.
    """
    if dask_scheduler is None:
        yield None
        return
    from fitaudit._optional import import_optional

    distributed = import_optional("distributed", "running an audit on a Dask cluster")
    if isinstance(dask_scheduler, distributed.Client):
        with joblib.parallel_config(backend="dask"):
            yield dask_scheduler
        return
    if not isinstance(dask_scheduler, str):
        raise InputError(f"`dask_scheduler` must be an address such as 'tcp://host:8786'; got {type(dask_scheduler).__name__}.")
    try:
        client = distributed.Client(dask_scheduler, timeout="20s")
    except (OSError, ValueError, TypeError) as exc:  # unreachable, or not an address distributed can parse
        raise InputError(f"`dask_scheduler`: cannot reach a Dask scheduler at {dask_scheduler!r} "
                         f"({type(exc).__name__}: {exc}).") from exc
    with client, joblib.parallel_config(backend="dask"):
        yield client
