"""Kendall's rank correlation between a measure and the generalization gap (tau-a).

User guide: docs/pgdl.md#kendalls-tau. Jiang et al., "Fantastic generalization measures and
where to find them" (ICLR 2020), eq. (1):

    tau = 1 / (n (n - 1)) * sum_{a != b} sgn(mu_a - mu_b) sgn(g_a - g_b)

This is Kendall's *tau-a*: a pair tied in either variable counts 0 and the
denominator stays ``n (n - 1)`` (scipy's default, tau-b, divides by the
geometric mean of the untied pair counts instead, so the two agree only
without ties).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import as_array

#: rows of the pair matrix handled at once (bounds memory at about 8 * chunk * n bytes)
_CHUNK = 1024


def check_scores(measure: Any, gap: Any) -> tuple[np.ndarray, np.ndarray]:
    """``measure`` and ``gap`` as finite 1-D float arrays of one length (at least 2)."""
    arrays = []
    for name, value in (("measure", measure), ("gap", gap)):
        array = as_array(value, name)
        if array.ndim != 1:
            raise InputError(f"`{name}` must be a 1-D sequence of numbers; got shape {array.shape}.")
        try:
            array = array.astype(np.float64)
        except (TypeError, ValueError):
            raise InputError(f"`{name}` must hold numbers; got dtype {array.dtype}.") from None
        if np.isnan(array).any():
            raise InputError(f"`{name}` has NaN at positions {np.flatnonzero(np.isnan(array))[:10].tolist()}.")
        arrays.append(array)
    measure_array, gap_array = arrays
    if measure_array.shape != gap_array.shape:
        raise InputError(
            f"`measure` and `gap` must have one value per model each; got {measure_array.size} and {gap_array.size}."
        )
    if measure_array.size < 2:
        raise InputError(f"`measure` needs at least 2 models to rank; got {measure_array.size}.")
    return measure_array, gap_array


def _signs(rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``sgn(rows[i] - values[j])`` by comparison (so infinities compare as numbers)."""
    return (rows[:, None] > values[None, :]).astype(np.int8) - (rows[:, None] < values[None, :]).astype(np.int8)


def kendall_tau(measure: Any, gap: Any) -> float:
    """Kendall's tau-a between a complexity measure and the generalization gap.

    Parameters
    ----------
    measure : array-like of shape (n,)
        The measure's value per model (larger = larger predicted gap).
    gap : array-like of shape (n,)
        The generalization gap per model (e.g. ``train_acc - test_acc``).

    Returns
    -------
    float
        ``tau`` in [-1, 1]; pairs tied in either variable count 0 (tau-a).

    Examples
    --------
    >>> kendall_tau([1, 2, 3], [0.1, 0.3, 0.2])
    0.3333333333333333
    """
    mu, g = check_scores(measure, gap)
    n = mu.size
    total = 0
    for start in range(0, n, _CHUNK):
        stop = min(start + _CHUNK, n)
        total += int((_signs(mu[start:stop], mu) * _signs(g[start:stop], g)).sum(dtype=np.int64))
    return float(total / (n * (n - 1)))
