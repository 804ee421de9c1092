"""Sensitivity profile: accuracy against each factor under uniform random sampling.

The examiner reports the worst case (Shu, Liu, Qiu, Yuille, AAAI 2020;
docs/examiner.md#what-is-measured); the profile shows the average case around it: the
examination's uniform random reference queries binned by one factor at a
time, with the accuracy in every bin (the other factors random). A factor
whose accuracy changes much across its bins is one the model is sensitive
to, as Engstrom et al. (ICML 2019, Fig. 2) plot accuracy against rotation
and translation, and Hendrycks & Dietterich (ICLR 2019) against corruption
severity.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fitaudit._validation import check_int
from fitaudit.data.factors import FactorSpace

#: a bin's accuracy enters ``spread`` only with at least this many queries
MIN_BIN = 10


def sensitivity_profile(factors: Any, correct: Any, space: FactorSpace, *, n_bins: int = 6) -> dict[str, Any]:
    """Accuracy per equal-width bin of every factor with a range.

    Parameters
    ----------
    factors : array (n, n_factors)
        Uniformly random queries, in ``space.names`` order.
    correct : array of bool (n,)
        Whether each was classified correctly.
    space : FactorSpace
    n_bins : int

    Returns
    -------
    dict
        ``n_queries``, ``accuracy`` (overall), ``n_bins`` and ``factors``:
        per factor ``edges`` (n_bins + 1), ``accuracy`` (per bin; None for an
        empty bin), ``count`` and ``spread`` (highest minus lowest accuracy
        over bins with at least :data:`MIN_BIN` queries; None without two
        such bins), the factors ordered by spread, highest first.
    """
    n_bins = check_int(n_bins, "n_bins", minimum=1)
    values = np.asarray(factors, dtype=float).reshape(-1, len(space))
    ok = np.asarray(correct, dtype=bool).ravel()
    per_factor: dict[str, Any] = {}
    for column, factor in enumerate(space.factors):
        if factor.high <= factor.low:
            continue
        edges = np.linspace(factor.low, factor.high, n_bins + 1)
        which = np.clip(np.searchsorted(edges, values[:, column], side="right") - 1, 0, n_bins - 1)
        count = np.bincount(which, minlength=n_bins)
        hits = np.bincount(which, weights=ok, minlength=n_bins)
        accuracy = [float(h / c) if c else None for h, c in zip(hits, count)]
        solid = [a for a, c in zip(accuracy, count) if a is not None and c >= MIN_BIN]
        per_factor[factor.name] = {
            "edges": edges.tolist(), "accuracy": accuracy, "count": count.tolist(),
            "spread": float(max(solid) - min(solid)) if len(solid) >= 2 else None,
        }
    ordered = dict(sorted(per_factor.items(), key=lambda kv: -(kv[1]["spread"] or 0.0)))
    return {
        "n_queries": int(len(ok)), "accuracy": float(ok.mean()) if len(ok) else None,
        "n_bins": n_bins, "factors": ordered,
    }


def result_profile(result: Any, *, n_bins: int = 6) -> dict[str, Any] | None:
    """:func:`sensitivity_profile` of an examination's reference queries (None without any)."""
    ref = result.reference_queries
    if not ref or not len(ref.get("label", [])):
        return None
    names = list(result.factor_names)
    factors = np.column_stack([np.asarray(ref[name], dtype=float) for name in names])
    correct = np.asarray(ref["predicted"]) == np.asarray(ref["label"])
    return sensitivity_profile(factors, correct, result.space(), n_bins=n_bins)
