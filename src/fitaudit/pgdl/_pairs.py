"""Pairwise sign variables and 2x2 contingency tables shared by the ranking metrics.

Every metric of the PGDL protocol (docs/pgdl.md#the-protocol-in-detail) looks at *ordered
pairs* of models (a, b) and two binary variables:
``V_g = +`` iff ``gap_a > gap_b`` and ``V_mu = +`` iff ``mu_a > mu_b``
(strict, so ties are ``-``). The pair's *cell* in the 2x2 table is
``2 * [V_g = -] + [V_mu = -]``, i.e. 0 = (+, +), 1 = (+, -), 2 = (-, +),
3 = (-, -): the gap is the first axis, as in the official scoring program.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: the official program's smoothing inside the entropy's logarithm (and only there)
OFFICIAL_ENTROPY_EPS = 1e-12


def pair_cells(measure: np.ndarray, gap: np.ndarray) -> np.ndarray:
    """Cells (0..3) of every ordered pair ``(a, b)``, an ``(n, n)`` int array (self-pairs: 3)."""
    gap_minus = ~(gap[:, None] > gap[None, :])
    measure_minus = ~(measure[:, None] > measure[None, :])
    return 2 * gap_minus.astype(np.int64) + measure_minus.astype(np.int64)


def pair_codes(codes: np.ndarray, sizes: Sequence[int]) -> list[np.ndarray]:
    """Per hyperparameter ``h``, the ``(n, n)`` code ``h_a * |P_h| + h_b`` of every ordered pair (a, b)."""
    out = []
    for column, size in enumerate(sizes):
        code = codes[:, column].astype(np.int64)
        out.append(code[:, None] * int(size) + code[None, :])
    return out


def pair_bins(per_hparam: Sequence[np.ndarray], sizes: Sequence[int], columns: Sequence[int]) -> tuple[np.ndarray, int]:
    """The bin of every ordered pair when conditioning on the hyperparameters ``columns``.

    A pair's bin is the tuple ``(h_a, h_b)`` of value indices for each
    conditioning hyperparameter ``h`` in turn, in mixed radix (the official
    program's order: the first hyperparameter's pair of values varies
    slowest). ``per_hparam`` comes from :func:`pair_codes`. Returns the
    ``(n, n)`` bin indices and the number of bins ``prod |P_h|^2`` (empty
    ones included).
    """
    n = per_hparam[0].shape[0] if per_hparam else 0
    bins = np.zeros((n, n), dtype=np.int64)
    n_bins = 1
    for column in columns:
        size = int(sizes[column]) ** 2
        bins = bins * size + per_hparam[column]
        n_bins *= size
    return bins, n_bins


def count_cells(flat: np.ndarray, n_bins: int) -> np.ndarray:
    """Counts ``(n_bins, 2, 2)`` from flat indices ``bin * 4 + cell``."""
    counts = np.bincount(flat.ravel(), minlength=n_bins * 4)
    return counts.reshape(n_bins, 2, 2).astype(np.float64)


def bin_tables(cells: np.ndarray, bins: np.ndarray, n_bins: int, mask: np.ndarray | None = None) -> np.ndarray:
    """Counts ``(n_bins, 2, 2)`` of the pairs' cells per bin (gap axis first).

    ``mask`` (boolean, like ``cells``) keeps only some pairs (e.g. no self-pairs).
    """
    flat = bins * 4 + cells
    return count_cells(flat if mask is None else flat[mask], n_bins)


def table_information(tables: np.ndarray, entropy_eps: float) -> tuple[np.ndarray, np.ndarray]:
    """Per table: mutual information ``I(V_mu; V_g)`` and entropy ``H(V_g)`` in bits.

    ``I = sum over non-zero cells of p_ij log2(p_ij / (p_i p_j))`` and
    ``H = -sum_i p_i log2(p_i + entropy_eps)`` with ``p_i`` the gap marginal.
    With ``entropy_eps = 0`` the convention ``0 log 0 = 0`` applies. An empty
    table gives NaN for both (0 / 0), as the official program does.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        total = tables.sum(axis=(1, 2))
        joint = tables / total[:, None, None]
        p_gap = joint.sum(axis=2)
        p_measure = joint.sum(axis=1)
        ratio = joint / (p_gap[:, :, None] * p_measure[:, None, :])
        terms = np.where(joint > 0, joint * np.log2(np.where(joint > 0, ratio, 1.0)), 0.0)
        information = terms.sum(axis=(1, 2))
        if entropy_eps > 0:
            entropy = -(p_gap * np.log2(p_gap + entropy_eps)).sum(axis=1)
        else:
            entropy = -np.where(p_gap > 0, p_gap * np.log2(np.where(p_gap > 0, p_gap, 1.0)), 0.0).sum(axis=1)
    empty = total == 0
    information[empty] = np.nan
    entropy[empty] = np.nan
    return information, entropy
