"""The seed convention: every function takes ``random_state``.

``random_state`` may be ``None`` (fresh entropy), an int, a
:class:`numpy.random.SeedSequence` or a :class:`numpy.random.Generator`.
The same int always gives the same numbers. Work split into independent
units (retraining runs, repetitions) derives one child seed per unit with
:func:`spawn_seeds`, so results do not depend on ``n_jobs`` or on the order
in which units finish.
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
        return np.random.default_rng(int(random_state))
    raise InputError(
        f"`{name}` must be None, a non-negative int, a SeedSequence or a Generator; "
        f"got {type(random_state).__name__}."
    )


def spawn_seeds(random_state: Any, n: int) -> list[int]:
    """Derive ``n`` independent integer seeds from ``random_state``.

    Integers (not generators) so that they travel cheaply to worker processes
    and can be written to a resumable checkpoint.
    """
    n = check_int(n, "n", minimum=0)
    rng = check_random_state(random_state)
    return [int(s) for s in rng.integers(0, 2**31 - 1, size=n)]
