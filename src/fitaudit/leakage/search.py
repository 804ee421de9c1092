"""Nearest neighbours for the leakage search: exact search with faiss.

faiss's ``IndexFlatL2`` computes every query-to-reference distance with
BLAS in chunks: exact answers (the same as a brute-force search) at tens of
millions of distances per second on two cores (the tests check it against
a plain numpy search, ``tests/reference_search.py``). On 50,000 x 50,000 image
features it was as fast as the approximate graph indexes tried beside it
(faiss HNSW, hnswlib; ``benchmarks/bench_leakage.py``), which return a
slightly different answer for a few per cent of queries, so the exact
search is kept.
"""

from __future__ import annotations

import numpy as np

from fitaudit._optional import import_optional

#: queries per faiss call (bounds the distance block held in memory)
QUERY_CHUNK = 8192


class ExactIndex:
    """Exact Euclidean search over fixed reference rows (faiss ``IndexFlatL2``), built once, queried many times.

    The leakage search queries the same reference rows with every block of
    queries and every shift of their views: one index holds the rows (a
    float32 copy) for all of those searches.

    Parameters
    ----------
    reference : ndarray, shape (m, d)
    """

    def __init__(self, reference: np.ndarray) -> None:
        faiss = import_optional("faiss", "the near-duplicate search")
        reference = np.ascontiguousarray(reference, dtype=np.float32)
        self.index = faiss.IndexFlatL2(reference.shape[1])
        self.index.add(reference)

    def __len__(self) -> int:
        return int(self.index.ntotal)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest reference rows of every query row, as :func:`nearest`."""
        k = min(k, len(self))
        distances = np.empty((len(queries), k), dtype=np.float32)
        indices = np.empty((len(queries), k), dtype=np.int64)
        for start in range(0, len(queries), QUERY_CHUNK):
            block = np.ascontiguousarray(queries[start : start + QUERY_CHUNK], dtype=np.float32)
            squared, found = self.index.search(block, k)
            distances[start : start + len(block)] = np.sqrt(np.maximum(squared, 0.0))
            indices[start : start + len(block)] = found
        return distances, indices


def nearest(queries: np.ndarray, reference: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest reference rows of every query row (exact, Euclidean).

    Parameters
    ----------
    queries : ndarray, shape (n, d)
    reference : ndarray, shape (m, d)
    k : int
        Neighbours per query (at most ``m``).

    Returns
    -------
    distances : ndarray of float32, shape (n, k)
        Euclidean distances, nearest first.
    indices : ndarray of int64, shape (n, k)
        Rows of ``reference``.
    """
    return ExactIndex(reference).search(queries, k)

