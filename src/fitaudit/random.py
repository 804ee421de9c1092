"""The seed contract: every entry point takes ``random_state``.

``random_state`` may be ``None`` (fresh entropy), a non-negative int, a
:class:`numpy.random.SeedSequence` or a :class:`numpy.random.Generator`.
An entry point checks it once, where it enters (:func:`check_random_state`,
or :func:`as_seed` where an integer seed is recorded or keys a checkpoint),
and hands child seeds down: work split into independent units (retraining
runs, repetitions, audit parts) derives one child seed per unit with
:func:`spawn_seeds`, so results do not depend on ``n_jobs`` or on the order
in which units finish. The same int always gives the same numbers; a
Generator is valid everywhere and is advanced by the draw of the seeds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import check_int

RandomState = None | int | np.random.SeedSequence | np.random.Generator


def check_random_state(random_state: Any, name: str = "random_state") -> np.random.Generator:
    """Return a :class:`numpy.random.Generator` for ``random_state``."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, np.random.SeedSequence):
        return np.random.default_rng(random_state)
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        if random_state < 0:
            raise InputError(f"`{name}` must be a non-negative integer seed; got {random_state}.")
        if random_state >= 2**32:  # scikit-learn and torch take seeds below 2**32
            raise InputError(f"`{name}` must be an integer seed below 2**32 (4294967296); got {random_state}.")
        return np.random.default_rng(int(random_state))
    raise InputError(
        f"`{name}` must be None, a non-negative int, a SeedSequence or a Generator; "
        f"got {type(random_state).__name__}."
    )


def as_seed(random_state: Any, name: str = "random_state") -> int:
    """The integer seed of a run, checked: an int is used as it is, anything else draws one.

    ``None`` draws from fresh entropy, a Generator or SeedSequence draws from
    itself (so a Generator gives a reproducible seed and is advanced). The
    result is what a run records and keys its checkpoints with.

    Raises
    ------
    InputError
        When ``random_state`` is not one of the accepted forms, or negative.
    """
    rng = check_random_state(random_state, name)  # validates every form
    if isinstance(random_state, (int, np.integer)):
        return int(random_state)
    return int(rng.integers(0, 2**31 - 1))


def spawn_seeds(random_state: Any, n: int) -> list[int]:
    """Derive ``n`` independent integer seeds from ``random_state``.

    Integers (not generators) so that they travel cheaply to worker processes
    and can be written to a resumable checkpoint.
    """
    n = check_int(n, "n", minimum=0)
    rng = check_random_state(random_state)
    return [int(s) for s in rng.integers(0, 2**31 - 1, size=n)]
