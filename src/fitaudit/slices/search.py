"""The slices of a table and their counts: one sort per column, cumulative counts for every cut.

Every column is coded once: a number by the quantile cut points it is cut
at (code ``i`` holds the values in ``(t_{i-1}, t_i]``), a category by its
values, a missing value by a code of its own. Every slice of one column is
then a range of codes (``x <= t_i``: codes ``0..i``; ``x > t_i``: codes
``i+1..k``; ``x = v``: one code; ``x is missing``: the last), so the rows and
errors of all of them come from one ``bincount`` and a cumulative sum per
column (:func:`single_counts`), and so do their counts inside any set of rows
(``rows=``: the overlap of two slices). Slices of two columns are
the intersections of the best single slices (SliceLine's second lattice
level, Sagadeeva and Boehm, SIGMOD 2021), counted by one product of their
row indicators.

A condition is ``[column, op, value]`` with ``op`` one of ``"<="``, ``">"``,
``"="`` and ``"is missing"`` (value ``None``), the form of the examiner's
weakness rules (:mod:`fitaudit.examine.weakness`) plus the two a table needs
(a category's value, a missing value).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

#: a number column with at most this many distinct values is also sliced by each value
MAX_VALUES = 10


@dataclasses.dataclass
class Column:
    """One column, coded: ``codes`` (one per row), and what each code is.

    ``kind`` is ``"number"`` (``cuts``: the thresholds, observed values;
    ``values``: the distinct values when there are at most
    :data:`MAX_VALUES`, else None) or ``"category"`` (``values``: the value of
    each code). The code ``n_codes - 1`` is the missing value when
    ``missing`` rows lack one.
    """

    name: str
    kind: str
    codes: np.ndarray
    n_codes: int
    cuts: np.ndarray
    values: list[Any] | None
    missing: int


def _python(value: Any) -> Any:
    """A numpy scalar as the Python value it holds (for JSON and for words)."""
    return value.item() if isinstance(value, np.generic) else value


def code_column(name: str, column: Any, max_thresholds: int) -> Column | str:
    """``column`` coded for slicing, or why it is not sliced (every value missing, one value only, dates).

    ``column`` is an array of floats (a numeric array's column: no pandas needed) or anything pandas takes
    as a Series (a table's column)."""
    if isinstance(column, np.ndarray) and column.dtype.kind == "f":
        return _code_numbers(name, column, max_thresholds)
    from fitaudit._optional import import_optional

    pd = import_optional("pandas", "slicing a table's columns")
    series = pd.Series(column).reset_index(drop=True)
    if pd.api.types.is_datetime64_any_dtype(series) or pd.api.types.is_timedelta64_dtype(series):
        return "dates and durations are not sliced"
    if not series.notna().any():
        return "every value is missing"
    if pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
        return _code_numbers(name, series.to_numpy(dtype=np.float64, na_value=np.nan), max_thresholds)
    return _code_categories(name, series)


def _code_numbers(name: str, values: np.ndarray, max_thresholds: int) -> Column | str:
    """A number column coded by its quantile cut points (observed values), missing values last."""
    present = ~np.isnan(values)
    missing = int((~present).sum())
    if not present.any():
        return "every value is missing"
    distinct = np.unique(values[present])
    if len(distinct) < 2:
        return f"one value only ({_python(distinct[0]):g})"
    if len(distinct) <= max_thresholds + 1:
        cuts = distinct[:-1]
    else:
        levels = np.arange(1, max_thresholds + 1) / (max_thresholds + 1)
        cuts = np.unique(np.quantile(values[present], levels, method="lower"))
        cuts = cuts[cuts < distinct[-1]]
    codes = np.searchsorted(cuts, values, side="left")
    n_codes = len(cuts) + 1
    if missing:
        codes[~present] = n_codes
        n_codes += 1
    listed = [_python(v) for v in distinct] if len(distinct) <= MAX_VALUES else None
    return Column(name, "number", codes.astype(np.int64), n_codes, cuts, listed, missing)


def _code_categories(name: str, series: Any) -> Column | str:
    """A category column coded by its values (sorted), missing values last."""
    import pandas as pd  # the caller imported it (import_optional)

    missing = int(series.isna().sum())
    codes, uniques = pd.factorize(series, sort=True)
    if len(uniques) < 2:
        return f"one value only ({uniques[0]!s})"
    n_codes = len(uniques)
    if missing:
        codes = np.where(codes < 0, n_codes, codes)
        n_codes += 1
    return Column(name, "category", np.asarray(codes, dtype=np.int64), n_codes, np.zeros(0),
                  [_python(v) for v in uniques], missing)


@dataclasses.dataclass
class Singles:
    """The slices of one column each: the column index, the code range ``[lo, hi]``, and the condition."""

    column: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    conditions: list[list[Any]]


def single_slices(columns: Sequence[Column]) -> Singles:
    """Every slice of one column: ``<=`` and ``>`` at each cut, ``=`` each value, ``is missing``.

    A number with few values (at most :data:`MAX_VALUES`) is sliced by each
    value, and by a cut only where its side holds two values or more (a cut
    that leaves one value on a side is that value's slice again).
    """
    column, lo, hi, conditions = [], [], [], []

    def add(j: int, low: int, high: int, condition: list[Any]) -> None:
        column.append(j)
        lo.append(low)
        hi.append(high)
        conditions.append(condition)

    for j, col in enumerate(columns):
        present_codes = col.n_codes - (1 if col.missing else 0)
        if col.kind == "number":
            k = len(col.cuts)
            few = col.values is not None
            for i, cut in enumerate(col.cuts):
                if not few or i >= 1:
                    add(j, 0, i, [col.name, "<=", float(cut)])
                if not few or i <= k - 2:
                    add(j, i + 1, k, [col.name, ">", float(cut)])
            if few:
                assert col.values is not None
                for i, value in enumerate(col.values):
                    add(j, i, i, [col.name, "=", value])
        else:
            assert col.values is not None
            for i, value in enumerate(col.values):
                add(j, i, i, [col.name, "=", value])
        if col.missing:
            add(j, present_codes, present_codes, [col.name, "is missing", None])
    return Singles(np.asarray(column, dtype=np.int64), np.asarray(lo, dtype=np.int64),
                   np.asarray(hi, dtype=np.int64), conditions)


def _range_sums(columns: Sequence[Column], singles: Singles, per_code: list[np.ndarray]) -> np.ndarray:
    """The sum over each single slice's code range of ``per_code[column]`` (counts or errors by code)."""
    out = np.zeros(len(singles.column), dtype=np.float64)
    for j in range(len(columns)):
        mine = singles.column == j
        if not mine.any():
            continue
        cumulative = np.concatenate([[0.0], np.cumsum(per_code[j])])
        out[mine] = cumulative[singles.hi[mine] + 1] - cumulative[singles.lo[mine]]
    return out


def single_counts(columns: Sequence[Column], singles: Singles, weights: np.ndarray | None = None,
                  rows: np.ndarray | None = None) -> np.ndarray:
    """Rows (or the sum of ``weights``, e.g. errors) of every single slice, within ``rows`` (a mask) if given."""
    per_code = []
    for col in columns:
        codes = col.codes if rows is None else col.codes[rows]
        w = None if weights is None else (weights if rows is None else weights[rows])
        per_code.append(np.bincount(codes, weights=w, minlength=col.n_codes).astype(np.float64))
    return _range_sums(columns, singles, per_code)


def single_mask(columns: Sequence[Column], singles: Singles, index: int) -> np.ndarray:
    """The rows of single slice ``index``."""
    codes = columns[int(singles.column[index])].codes
    return (codes >= singles.lo[index]) & (codes <= singles.hi[index])


def sliceline_score(size: np.ndarray, errors: np.ndarray, n: int, total_errors: float, alpha: float) -> np.ndarray:
    """SliceLine's score of slices (Sagadeeva and Boehm, SIGMOD 2021, Eq. 1).

    ``alpha (e_s / e - 1) - (1 - alpha) (n / |s| - 1)`` with ``e_s`` the
    slice's error rate and ``e`` the overall one: above 0 for a slice that
    errs more than the whole by more than its smallness costs. ``-inf``
    for empty slices or when nothing errs.
    """
    size = np.asarray(size, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(size > 0, np.asarray(errors, dtype=np.float64) / size, 0.0)
        score = alpha * (rate / (total_errors / n) - 1.0) - (1.0 - alpha) * (n / size - 1.0)
    return np.where((size > 0) & (total_errors > 0), score, -np.inf)


def _log_pmf(x: np.ndarray, n: np.ndarray, good: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """log P(X = x) for X hypergeometric: ``draws`` of ``n`` items of which ``good`` are good."""
    from scipy.special import gammaln

    def log_choose(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return gammaln(a + 1) - gammaln(b + 1) - gammaln(a - b + 1)

    return log_choose(good, x) + log_choose(n - good, draws - x) - log_choose(n, draws)


def hypergeom_sf(k: Any, n: Any, good: Any, draws: Any) -> np.ndarray:
    """P(X >= k) for X hypergeometric (``draws`` of ``n`` items, ``good`` of them good), vectorised.

    The probabilities fall away from the mode on both sides, so the tail is
    summed from ``k`` away from the mode (``k`` above it), or ``1 -`` the
    other tail from ``k - 1`` down (``k`` at or below it), each term from the
    last by the ratio of consecutive probabilities, until the terms no longer
    change the sum. It equals ``scipy.stats.hypergeom.sf(k - 1, n, good,
    draws)``, whose per-value summation is too slow for thousands of slices
    of 100,000 rows.
    """
    k, n, good, draws = (np.asarray(v, dtype=np.float64) for v in np.broadcast_arrays(k, n, good, draws))
    low = np.maximum(0.0, draws - (n - good))
    high = np.minimum(good, draws)
    k = np.clip(k, low, high + 1)
    mode = np.floor((draws + 1) * (good + 1) / (n + 2))
    upper = k > mode
    start = np.where(upper, k, k - 1)
    inside = (start >= low) & (start <= high)
    term = np.where(inside, np.exp(_log_pmf(np.clip(start, low, high), n, good, draws)), 0.0)
    total = term.copy()
    x = start.copy()
    active = inside.copy()
    while active.any():
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(upper, (good - x) * (draws - x) / ((x + 1) * (n - good - draws + x + 1)),
                             x * (n - good - draws + x) / ((good - x + 1) * (draws - x + 1)))
        x = np.where(upper, x + 1, x - 1)
        active &= (x >= low) & (x <= high)
        term = np.where(active, term * np.nan_to_num(ratio), 0.0)
        total += term
        active &= term > total * 1e-17
    return np.clip(np.where(upper, total, 1.0 - total), 0.0, 1.0)


def fisher_greater(errors: np.ndarray, size: np.ndarray, total_errors: Any, n: Any) -> np.ndarray:
    """One-sided Fisher exact p-values that each slice errs more often than the rest.

    Given the margins (the slice's ``size`` rows, the ``total_errors`` of
    all ``n``), the slice's errors are hypergeometric under the hypothesis
    that errors fall on rows regardless of the slice; the p-value is the
    chance of ``errors`` or more (Fisher, 1935; ``scipy.stats.fisher_exact``
    with ``alternative="greater"`` on the 2 x 2 table of slice/rest by
    wrong/right), computed by :func:`hypergeom_sf`.
    """
    return hypergeom_sf(errors, n, total_errors, size)


def number_text(value: float) -> str:
    """A threshold as the table would show it: ``1,239``, ``20.01``, ``0.1459`` (six significant digits)."""
    text = f"{value:,.6g}"
    return text if "e" not in text else f"{value:.6g}"


def condition_text(condition: Sequence[Any]) -> str:
    """``"worst area > 1,239"``, ``"island = Biscoe"``, ``"bill_length_mm is missing"``."""
    name, op, value = condition
    if op == "is missing":
        return f"{name} is missing"
    if op in ("<=", ">") or isinstance(value, float):
        shown = number_text(float(value)) if isinstance(value, (int, float)) and not isinstance(value, bool) \
            else str(value)
        return f"{name} {op} {shown}"
    return f"{name} {op} {value}"


def slice_text(conditions: Sequence[Sequence[Any]]) -> str:
    """The conditions of a slice joined by ``and``."""
    return " and ".join(condition_text(c) for c in conditions)


__all__ = ["MAX_VALUES", "Column", "Singles", "code_column", "condition_text", "fisher_greater", "hypergeom_sf", "number_text",
           "single_counts", "single_mask", "single_slices", "slice_text", "sliceline_score"]
