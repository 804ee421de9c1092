"""The plain nearest-neighbour search the leakage tests check :func:`fitaudit.leakage.search.nearest` against."""

from __future__ import annotations

import numpy as np


def brute_force_nearest(queries: np.ndarray, reference: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~fitaudit.leakage.search.nearest` the slow, plain way (float64 numpy, one query at a time)."""
    reference = np.asarray(reference, dtype=np.float64)
    k = min(k, len(reference))
    distances = np.empty((len(queries), k))
    indices = np.empty((len(queries), k), dtype=np.int64)
    for i, query in enumerate(np.asarray(queries, dtype=np.float64)):
        all_distances = np.sqrt(((reference - query) ** 2).sum(axis=1))
        order = np.argsort(all_distances, kind="stable")[:k]
        distances[i], indices[i] = all_distances[order], order
    return distances, indices
