"""A slow, straightforward slice search written from the spec (docs/slices.md), independent of fitaudit.slices.

Every slice is a boolean mask built with pandas comparisons; every test is
``scipy.stats.fisher_exact``; each half of the family is adjusted by
statsmodels' ``multipletests(method="fdr_bh")`` (the pairs padded with a
p-value of 1 for every cross-column pair not tested).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import fisher_exact
from statsmodels.stats.multitest import multipletests

MAX_VALUES = 10


def _cuts(values: pd.Series, max_thresholds: int) -> list[float]:
    present = values.dropna().to_numpy(dtype=float)
    distinct = sorted(set(present.tolist()))
    if len(distinct) <= max_thresholds + 1:
        return distinct[:-1]
    levels = [(i + 1) / (max_thresholds + 1) for i in range(max_thresholds)]
    cuts = sorted({float(np.quantile(present, q, method="lower")) for q in levels})
    return [c for c in cuts if c < distinct[-1]]


def single_slices(frame: pd.DataFrame, max_thresholds: int) -> list[tuple[str, np.ndarray]]:
    """(text, mask) of every slice of one column, in fitaudit's order of conditions (its texts)."""
    from fitaudit.slices.search import condition_text

    out = []
    for name in frame.columns:
        column = frame[name]
        if column.notna().sum() == 0 or column.dropna().nunique() < 2:
            continue
        numeric = pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)
        if numeric:
            values = column.astype(float)
            distinct = sorted(set(values.dropna().tolist()))
            few = len(distinct) <= MAX_VALUES
            cuts = _cuts(values, max_thresholds)
            for i, t in enumerate(cuts):
                if not few or i >= 1:
                    out.append((condition_text([name, "<=", t]), (values <= t).to_numpy()))
                if not few or i <= len(cuts) - 2:
                    out.append((condition_text([name, ">", t]), (values > t).to_numpy()))
            if few:
                for v in distinct:
                    out.append((condition_text([name, "=", v]), (values == v).to_numpy()))
        else:
            for v in sorted(column.dropna().unique()):
                out.append((condition_text([name, "=", v]), (column == v).to_numpy()))
        if column.isna().any():
            out.append((f"{name} is missing", column.isna().to_numpy()))
    return out


def search(frame: pd.DataFrame, errors: np.ndarray, *, level=0.05, min_rows=20, min_gap=0.05, max_thresholds=50,
           pair_candidates=20, alpha=0.95):
    """The flagged slices' texts with their p- and q-values, the family sizes, and the first group's texts."""
    n, total = len(errors), int(errors.sum())
    singles = [(t, m) for t, m in single_slices(frame, max_thresholds) if min_rows <= m.sum() <= n - min_rows]
    scores = []
    for _, mask in singles:
        size, wrong = mask.sum(), errors[mask].sum()
        score = alpha * ((wrong / size) / (total / n) - 1) - (1 - alpha) * (n / size - 1)
        scores.append(score if wrong > 0 else -np.inf)
    ranked = sorted(range(len(singles)), key=lambda i: -scores[i])  # stable: ties keep the singles' order
    parents, per_column = [], {}
    for i in ranked:
        column = _column(frame, singles[i][0])
        if np.isfinite(scores[i]) and per_column.get(column, 0) < 3:
            parents.append(i)
            per_column[column] = per_column.get(column, 0) + 1
    parents = parents[:pair_candidates]
    pairs = []
    for x in range(len(parents)):
        for y in range(x + 1, len(parents)):
            a, b = parents[x], parents[y]
            if _column(frame, singles[a][0]) == _column(frame, singles[b][0]):
                continue
            mask = singles[a][1] & singles[b][1]
            size = mask.sum()
            if size < min_rows or n - size < min_rows or size >= min(singles[a][1].sum(), singles[b][1].sum()):
                continue
            pairs.append((f"{singles[a][0]} and {singles[b][0]}", mask))
    family = singles + pairs
    pvalues = []
    for _, mask in family:
        wrong, size = int(errors[mask].sum()), int(mask.sum())
        table = [[wrong, size - wrong], [total - wrong, n - size - (total - wrong)]]
        pvalues.append(fisher_exact(table, alternative="greater")[1])
    # two halves of the level: singles over themselves, pairs over every cross-column pair of singles
    counts = pd.Series([_column(frame, t) for t, _ in singles]).value_counts().to_numpy()
    pair_family = int((counts.sum() ** 2 - (counts ** 2).sum()) // 2)
    share = 0.5 if pair_family else 1.0
    single_q = multipletests(pvalues[:len(singles)], method="fdr_bh")[1]
    padded = list(pvalues[len(singles):]) + [1.0] * (pair_family - len(pairs))
    pair_q = multipletests(padded, method="fdr_bh")[1][:len(pairs)] if padded else []
    qvalues = np.minimum(np.concatenate([single_q, pair_q]) / share, 1.0)
    flagged = {}
    for (text, mask), p, q in zip(family, pvalues, qvalues):
        size, wrong = mask.sum(), errors[mask].sum()
        gap = (1 - (total - wrong) / (n - size)) - (1 - wrong / size)
        if q <= level and gap >= min_gap - 1e-12:
            flagged[text] = (p, q, mask)
    return {"n_single": len(singles), "n_pairs": len(pairs), "pair_family": pair_family, "flagged": flagged,
            "weakest": family[int(np.lexsort((pvalues, qvalues))[0])][0] if family else None}


def _column(frame: pd.DataFrame, text: str) -> str:
    """The column a single slice's text names (the longest column name it starts with)."""
    return max((c for c in frame.columns if text.startswith(f"{c} ")), key=len)
