"""How a computation runs, as one value: :class:`RunOptions`.

The PGDL harness and everything built on it (:func:`fitaudit.pgdl.harness.score_task`,
:func:`fitaudit.pgdl.leaderboard.leaderboard`,
:func:`fitaudit.pgdl.leaderboard.rank_models`, :func:`fitaudit.pgdl.zoo.build_zoo`,
:func:`fitaudit.pgdl.zoo_task.build_zoo_task`) take one ``options`` argument
instead of the same seven keywords passed one by one; the CLI builds it once
from the flags every command shares (``--device``, ``--backend``,
``--n-jobs``, ``--dask-scheduler``, ``--seed``, ``--quiet``, ``--trust-code``).

Examples
--------
>>> from fitaudit.options import RunOptions
>>> options = RunOptions(n_jobs=2, progress=False)
>>> options.device, options.n_jobs
('cpu', 2)
>>> options.replace(device="cuda").device
'cuda'
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """Where and how a computation runs; its numbers depend only on ``random_state``.

    Parameters
    ----------
    device : str
        The torch device the models and measures run on (``"cpu"``,
        ``"cuda"``, ``"cuda:1"``, ``"mps"``).
    backend : {"auto", "torch", "onnx", "eager"} or None
        How torch models run (:func:`fitaudit.models.inference.using_backend`);
        None: the process default.
    n_jobs : int or None
        Parallel units (joblib's convention: None one, -1 every core).
    dask_scheduler : str, dask.distributed.Client or None
        Run the parallel units on this Dask cluster
        (:func:`fitaudit.parallel.compute_backend`); None: locally.
    random_state : None, int, SeedSequence or Generator
        Seeds the computation (the same seed gives the same numbers whatever
        ``n_jobs``, ``device`` aside).
    progress : bool
        Show progress bars.
    trust_code : bool
        Whether a model folder naming its own architecture file may run it
        (the caller's decision, ``--trust-code``; never a file's).
    """

    device: str = "cpu"
    backend: str | None = None
    n_jobs: int | None = None
    dask_scheduler: Any = None
    random_state: Any = 0
    progress: bool = True
    trust_code: bool = False

    def replace(self, **changes: Any) -> RunOptions:
        """A copy with ``changes`` (the options are frozen)."""
        return dataclasses.replace(self, **changes)

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Within the block, torch models use :attr:`backend` and parallel work runs on :attr:`dask_scheduler`."""
        from fitaudit.models.inference import using_backend
        from fitaudit.parallel import compute_backend

        with using_backend(self.backend), compute_backend(self.dask_scheduler):
            yield


def as_options(options: RunOptions | None) -> RunOptions:
    """``options``, or the defaults for None; anything else is an error naming the argument."""
    from fitaudit._errors import InputError

    if options is None:
        return RunOptions()
    if not isinstance(options, RunOptions):
        raise InputError(f"`options` must be a fitaudit.options.RunOptions; got {type(options).__name__}.")
    return options
