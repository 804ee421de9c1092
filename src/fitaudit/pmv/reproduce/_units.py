"""One checkpointed setting of a PMV reproduction."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from fitaudit.checkpoint import CheckpointStore
from fitaudit.results import to_jsonable


def run_unit(
    function: Callable[..., dict[str, Any]],
    X: np.ndarray,
    y: np.ndarray,
    *,
    checkpoint_dir: Any,
    n_jobs: int | None,
    progress: bool,
    **settings: Any,
) -> dict[str, Any]:
    """``function(X, y, **settings)`` in JSON form, stored in ``checkpoint_dir`` when one is given.

    The key fingerprints the function (name and code), every setting (the
    mode's sizes and the seeds) and the data, so a rerun with the same
    inputs reads the stored value and any change computes anew. ``n_jobs``
    and ``progress`` do not change the numbers and are not part of the key.
    The PMV fits inside the unit go to the ``fits`` subfolder (keyed by
    :mod:`fitaudit.pmv`), so a unit killed half way resumes from its fits.
    """
    if checkpoint_dir is None:
        return to_jsonable(function(X, y, n_jobs=n_jobs, progress=progress, checkpoint_dir=None, **settings))
    store = CheckpointStore(checkpoint_dir)
    key = store.key(function, settings, X, y)
    return store.get_or_compute(
        key,
        lambda: function(
            X, y, n_jobs=n_jobs, progress=progress, checkpoint_dir=store.subfolder("fits"), **settings
        ),
        function=f"{function.__module__}.{function.__qualname__}",
        settings=settings,
    )
