"""Where does the model fail? Slices of the scored rows whose accuracy is shown below the rest's.

:func:`find_weak_slices` cuts the scored rows by each column (a number at up
to ``max_thresholds`` quantile cut points, ``x <= t`` and ``x > t``; a
category by each value; missing values on their own) and by pairs of
columns, searched as SliceLine does [1]_: slices are scored by size and
error (:func:`fitaudit.slices.search.sliceline_score`), pruned by support
(fewer than ``min_rows`` rows in the slice or outside it: not tried), and
the pairs are the intersections of the ``pair_candidates`` best single
slices (SliceLine's second lattice level; at most three of one column).
Every slice tried is tested
against the rest of the rows with a one-sided Fisher exact test [2]_ (does
it err more often?). The false-discovery rate of the family is controlled
at ``level`` by Benjamini and Hochberg's procedure [3]_ (valid under the
positive dependence of one-sided tests on overlapping slices [4]_), split in
two halves: the slices of one column at ``level / 2`` over all of them, and
the slices of two columns at ``level / 2`` over every pair of single slices
of different columns that could be formed (``n_pair_family``), of which only
the pairs of the best singles are tested, the rest counting as not rejected
(the pairs tested are chosen on the same rows, so their own number would
not do). The false discoveries of the two halves add up to at most
``level``. A slice is *flagged* when its adjusted p-value is at most
``level`` and its accuracy is at least ``min_gap`` below the rest's.

Many flagged slices hold nearly the same rows (``worst radius > 20.01`` and
``worst area > 1,235`` on breast_cancer). The flagged slices are grouped
into distinct weaknesses: the group's best slice is the flagged one with the
smallest p-value; a flagged slice that is no longer weak once the rows of
the groups so far are left out is explained by them; the next group starts
from the slice still weak outside them with the smallest p-value there. A
group lists the slices whose rows overlap its best one's by at least
``same_rows`` (Jaccard's index: shared rows over the rows of either) as the
same rows, and is named by the simplest of them (the fewest conditions, then
the smallest p-value). The accuracy of each slice and of the rest comes
with its exact (Clopper-Pearson) interval.

The examiner's weakness rules (:mod:`fitaudit.examine.weakness`) are read
off the leaves of a decision tree fitted to the failures: leaves partition
the rows and come with no control of the family, so they are not reused for
the search; the conditions have the same form (``[column, op, value]``).

References
----------
.. [1] S. Sagadeeva and M. Boehm, "SliceLine: Fast, linear-algebra-based
       slice finding for ML model debugging", SIGMOD 2021.
.. [2] R. A. Fisher, "The logic of inductive inference", J. R. Statist.
       Soc. 98, 1935.
.. [3] Y. Benjamini and Y. Hochberg, "Controlling the false discovery rate:
       a practical and powerful approach to multiple testing",
       J. R. Statist. Soc. B 57, 1995.
.. [4] Y. Benjamini and D. Yekutieli, "The control of the false discovery
       rate in multiple testing under dependency", Ann. Statist. 29, 2001.

Examples
--------
>>> import numpy as np, pandas as pd
>>> rng = np.random.default_rng(0)
>>> X = pd.DataFrame({"age": rng.integers(18, 90, 600), "city": rng.choice(["Graz", "Wien"], 600)})
>>> y = rng.integers(0, 2, 600)
>>> predicted = np.where(X["age"] > 70, 1 - y, y)           # always wrong after 70
>>> result = find_weak_slices(X, y, predicted)
>>> result.verdict().status, result.groups[0]["text"].startswith("age > ")
('fail', True)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import check_float, check_int
from fitaudit.results import Result
from fitaudit.slices.decision import slice_contradiction, slice_verdict
from fitaudit.slices.power import POWER, detectable_gap
from fitaudit.slices.search import (
    Column,
    Singles,
    code_column,
    fisher_greater,
    single_counts,
    single_mask,
    single_slices,
    slice_text,
    sliceline_score,
)
from fitaudit.stats.intervals import DEFAULT_CONFIDENCE, binomial_interval, check_confidence_level
from fitaudit.stats.multiple import benjamini_hochberg
from fitaudit.verdict import Verdict

#: SliceLine's weight of the error term against the size term (the paper's default)
SLICELINE_ALPHA = 0.95

#: the best single slices of one column that may be parents of pairs (nested cuts of one column are
#: nearly the same rows: without a cap, one column's cuts would take every parent's place)
PARENTS_PER_COLUMN = 3

#: equivalent descriptions kept per group (the count of all is kept too)
LISTED_SAME = 8


@dataclasses.dataclass(repr=False)
class SliceResult(Result):
    """Slices of the scored rows whose accuracy is shown below the rest's (:func:`find_weak_slices`).

    Attributes
    ----------
    n, correct : int
        Scored rows and those the model got right.
    accuracy : float
        ``correct / n``.
    level : float
        The false-discovery rate of the family of slices tried (Benjamini-Hochberg).
    min_rows : int
        Fewest rows in a slice, and outside it, for the slice to be tried.
    min_gap : float
        Smallest accuracy gap (rest minus slice) for a slice to be flagged.
    confidence_level : float
        Level of the slices' exact intervals.
    columns : list of str
        The columns sliced.
    skipped_columns : dict
        ``{column: why it was not sliced}`` (every value missing, one value only).
    n_single, n_pairs : int
        Slices of one column and of two columns tested.
    n_pair_family : int
        Slices of two columns that could be formed (every pair of single
        slices of different columns): the family the pairs are adjusted
        over, since the pairs tested were chosen on the same rows.
    n_flagged : int
        Slices flagged, before they are grouped.
    groups : list of dict
        The flagged slices grouped by their rows, the most significant
        first (at most ``max_groups``): ``text`` and ``conditions`` of the
        group's best slice, its ``rows``, ``correct``, ``accuracy`` with
        ``low``, ``high``; the rest's ``rest_rows``, ``rest_correct``,
        ``rest_accuracy`` with ``rest_low``, ``rest_high``; ``gap``,
        ``pvalue`` (one-sided Fisher) and ``qvalue`` (the smallest
        false-discovery rate at which it is flagged: Benjamini-Hochberg in
        its family, doubled for the half of the level each family gets);
        ``same_rows`` (the texts of up to :data:`LISTED_SAME` other flagged
        slices with nearly the same rows) and ``n_same`` (all of them).
    n_groups : int
        Groups of flagged slices (``groups`` lists the first ones).
    weakest : dict or None
        The slice tried with the smallest q-value (then p-value), flagged or not (the keys
        of a group's best slice, without ``same_rows``).
    detectable : list of dict
        What the search could see: for a slice of ``min_rows`` rows and one
        of a tenth of the rows (when that is 5 ``min_rows`` or more), its ``rows`` and the smallest
        ``gap`` below the overall accuracy that it shows with :attr:`power`
        (:func:`fitaudit.slices.power.detectable_gap`, at the per-slice level
        ``level / 2 / n_single``, BH's threshold for one weak slice of one
        column; at least ``min_gap``), ``None`` when even a slice that is always
        wrong is not seen that often.
    power : float
    settings : dict
        ``max_thresholds``, ``pair_candidates``, ``same_rows``, ``alpha``, ``max_groups``.
    """

    n: int
    correct: int
    accuracy: float
    level: float
    min_rows: int
    min_gap: float
    confidence_level: float
    columns: list[str]
    skipped_columns: dict[str, str]
    n_single: int
    n_pairs: int
    n_pair_family: int
    n_flagged: int
    groups: list[dict[str, Any]]
    n_groups: int
    weakest: dict[str, Any] | None
    detectable: list[dict[str, Any]]
    power: float
    settings: dict[str, Any]

    @property
    def n_tried(self) -> int:
        """Slices tested: of one column and of two."""
        return self.n_single + self.n_pairs

    def _summary_fields(self) -> list[str]:
        return ["n", "accuracy", "n_tried", "n_flagged", "n_groups"]

    def __repr__(self) -> str:
        lines = [super().__repr__()]
        lines += [f"  weak slice: {g['text']}: {g['accuracy']:.3f} on {g['rows']} rows vs {g['rest_accuracy']:.3f}"
                  for g in self.groups]
        return "\n".join(lines)

    def verdict(self, **context: Any) -> Verdict:
        """``fail`` with a flagged slice, ``pass`` when none is and the search could see one
        (:func:`fitaudit.slices.decision.slice_verdict`)."""
        return slice_verdict(self, **context)

    def contradiction(self) -> str | None:
        return slice_contradiction(self)


def _columns_of(X: Any, feature_names: Any) -> list[tuple[str, Any]]:
    """``(name, values)`` of every column: a table's own names, an array's ``feature_names`` or ``x[j]``."""
    from fitaudit.data.tables import as_frame, is_frame

    if is_frame(X):
        frame = as_frame(X, "X")
        if feature_names is not None:
            raise InputError("`feature_names` goes with an array as `X`; a table's columns are its own names.")
        return [(str(name), frame[name]) for name in frame.columns]
    try:
        values = np.asarray(X)
    except Exception as exc:  # ragged rows
        raise InputError(f"`X` must be a table (DataFrame) or a 2-D array; could not convert it ({exc}).") from exc
    if values.ndim != 2:
        raise InputError(f"`X` must be a table (DataFrame) or a 2-D array of rows; got shape {values.shape}.")
    names = [f"x[{j}]" for j in range(values.shape[1])] if feature_names is None else [str(f) for f in feature_names]
    if len(names) != values.shape[1]:
        raise InputError(f"`feature_names` has {len(names)} names for the {values.shape[1]} columns of `X`.")
    if np.issubdtype(values.dtype, np.number):
        return [(name, values[:, j].astype(np.float64)) for j, name in enumerate(names)]
    return [(name, values[:, j]) for j, name in enumerate(names)]


@dataclasses.dataclass
class _Family:
    """Every slice tried: the single slices, then the pairs (indices into the singles), with their counts.

    ``indicator`` holds the rows of the pairs' parents (one column each, ``parent_column`` maps a single to
    its column), so the rows of every pair inside any set of rows are one matrix product away.
    """

    columns: list[Column]
    singles: Singles
    pairs: np.ndarray
    indicator: np.ndarray
    parent_column: dict[int, int]
    sizes: np.ndarray
    wrong: np.ndarray
    conditions: list[list[list[Any]]]
    pair_family: int

    def mask(self, index: int) -> np.ndarray:
        """The rows of slice ``index``."""
        n_single = len(self.singles.column)
        if index < n_single:
            return single_mask(self.columns, self.singles, index)
        a, b = self.pairs[index - n_single]
        return single_mask(self.columns, self.singles, int(a)) & single_mask(self.columns, self.singles, int(b))

    def within(self, rows: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        """The rows (or the sum of ``weights``) of every slice inside ``rows`` (a mask)."""
        inside = single_counts(self.columns, self.singles, weights, rows=rows)
        if not len(self.pairs):
            return inside
        block = self.indicator[rows]
        weighted = block if weights is None else block * weights[rows, None]
        products = block.T @ weighted
        a = np.array([self.parent_column[int(p)] for p in self.pairs[:, 0]])
        b = np.array([self.parent_column[int(p)] for p in self.pairs[:, 1]])
        return np.concatenate([inside, products[a, b]])


def _family(columns: list[Column], errors: np.ndarray, min_rows: int, candidates: int) -> _Family:
    """The single slices with ``min_rows`` rows in and out, and SliceLine's second level: the intersections of
    the ``candidates`` best of them (by SliceLine's score, with an error, at most :data:`PARENTS_PER_COLUMN`
    of a column) of different columns that keep ``min_rows`` rows in and out and are not one of their two
    parents (pruned by support)."""
    n, total_errors = len(errors), float(errors.sum())
    singles = single_slices(columns)
    sizes = single_counts(columns, singles)
    keep = (sizes >= min_rows) & (n - sizes >= min_rows)
    singles = Singles(singles.column[keep], singles.lo[keep], singles.hi[keep],
                      [c for c, k in zip(singles.conditions, keep) if k])
    sizes = sizes[keep]
    wrong = single_counts(columns, singles, errors)
    scores = sliceline_score(sizes, wrong, n, total_errors, SLICELINE_ALPHA)
    usable = np.flatnonzero(np.isfinite(scores) & (wrong > 0))
    ranked = usable[np.argsort(-scores[usable], kind="stable")]
    rank_in_column = np.zeros(len(ranked), dtype=np.int64)  # nested cuts of one column would crowd out the rest
    seen: dict[int, int] = {}
    for i, single in enumerate(ranked):
        column = int(singles.column[single])
        rank_in_column[i] = seen.get(column, 0)
        seen[column] = rank_in_column[i] + 1
    parents = ranked[rank_in_column < PARENTS_PER_COLUMN][:candidates]
    conditions = [[c] for c in singles.conditions]
    per_column = np.bincount(singles.column, minlength=len(columns)).astype(np.float64)
    pair_family = int(round((per_column.sum() ** 2 - (per_column ** 2).sum()) / 2))  # every cross-column pair
    if len(parents) < 2:
        return _Family(columns, singles, np.zeros((0, 2), dtype=np.int64), np.zeros((n, 0)), {}, sizes, wrong,
                       conditions, pair_family)
    indicator = np.column_stack([single_mask(columns, singles, int(p)) for p in parents]).astype(np.float64)
    both = indicator.T @ indicator
    both_wrong = indicator.T @ (indicator * errors[:, None])
    a, b = np.triu_indices(len(parents), k=1)
    size = both[a, b]
    keep = ((singles.column[parents[a]] != singles.column[parents[b]]) & (size >= min_rows)
            & (n - size >= min_rows) & (size < np.minimum(sizes[parents[a]], sizes[parents[b]])))
    a, b = a[keep], b[keep]
    pairs = np.column_stack([parents[a], parents[b]])
    conditions += [[singles.conditions[i], singles.conditions[j]] for i, j in pairs]
    return _Family(columns, singles, pairs, indicator, {int(p): i for i, p in enumerate(parents)},
                   np.concatenate([sizes, both[a, b]]), np.concatenate([wrong, both_wrong[a, b]]), conditions,
                   pair_family)


def _rest_gap(size: np.ndarray, wrong: np.ndarray, n: float, total_errors: float) -> np.ndarray:
    """The rest's accuracy minus the slice's (NaN for an empty slice or rest)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (1.0 - (total_errors - wrong) / (n - size)) - (1.0 - wrong / size)


def find_weak_slices(
    X: Any,
    y_true: Any,
    y_pred: Any,
    *,
    level: float = 0.05,
    min_rows: int = 20,
    min_gap: float = 0.05,
    max_thresholds: int = 50,
    pair_candidates: int = 20,
    same_rows: float = 0.9,
    max_groups: int = 10,
    confidence_level: float = DEFAULT_CONFIDENCE,
    feature_names: Any = None,
) -> SliceResult:
    """Slices of the scored rows whose accuracy is shown below the rest's (see the module docstring).

    Parameters
    ----------
    X : DataFrame or 2-D array
        The scored rows' features, in the user's column names (an array's
        columns are ``x[0]``, ``x[1]``, ... unless ``feature_names`` names them).
    y_true, y_pred : array-like (n,)
        The labels and the model's predictions of those rows.
    level : float
        False-discovery rate of the family of slices tried (Benjamini-Hochberg).
    min_rows : int
        Fewest rows a slice, and the rest, must hold to be tried (SliceLine's support).
    min_gap : float
        Smallest accuracy gap (rest minus slice) for a slice to be flagged.
    max_thresholds : int
        Quantile cut points per number column (all cuts between its values when it has fewer).
    pair_candidates : int
        The best single slices (SliceLine's score) whose pairs are tried.
    same_rows : float
        Jaccard overlap from which a flagged slice counts as the same rows as its group's best.
    max_groups : int
        Groups of flagged slices listed.
    confidence_level : float
        Level of the slices' exact intervals.
    feature_names : sequence of str, optional
        Names of an array's columns.

    Returns
    -------
    SliceResult
    """
    level = check_float(level, "level", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    min_rows = check_int(min_rows, "min_rows", minimum=1)
    min_gap = check_float(min_gap, "min_gap", low=0.0, high=1.0)
    max_thresholds = check_int(max_thresholds, "max_thresholds", minimum=1)
    pair_candidates = check_int(pair_candidates, "pair_candidates", minimum=0)
    same_rows = check_float(same_rows, "same_rows", low=0.0, high=1.0, low_inclusive=False)
    max_groups = check_int(max_groups, "max_groups", minimum=1)
    confidence_level = check_confidence_level(confidence_level)
    named = _columns_of(X, feature_names)
    truth, predicted = np.asarray(y_true), np.asarray(y_pred)
    if truth.ndim != 1 or predicted.shape != truth.shape:
        raise InputError(f"`y_true` and `y_pred` must be 1-D of one length; got shapes {truth.shape} and "
                         f"{predicted.shape}.")
    n = len(truth)
    if n == 0:
        raise InputError("`y_true` is empty: there are no scored rows to slice.")
    if named and len(named[0][1]) != n:
        raise InputError(f"`X` has {len(named[0][1])} rows but `y_true` has {n} labels.")
    errors = (truth != predicted).astype(np.float64)
    total_errors = int(errors.sum())
    columns: list[Column] = []
    skipped: dict[str, str] = {}
    for name, values in named:
        coded = code_column(name, values, max_thresholds)
        if isinstance(coded, str):
            skipped[name] = coded
        else:
            columns.append(coded)
    family = _family(columns, errors, min_rows, pair_candidates)
    sizes, wrong = family.sizes, family.wrong
    pvalues = fisher_greater(wrong, sizes, total_errors, n)
    n_single = len(family.singles.column)
    share = 0.5 if family.pair_family else 1.0  # of the level, to each family
    qvalues = np.concatenate([benjamini_hochberg(pvalues[:n_single]) / share,
                              benjamini_hochberg(pvalues[n_single:], m=max(family.pair_family, 1)) / share])
    qvalues = np.minimum(qvalues, 1.0)
    rejected = qvalues <= level
    cutoffs = np.empty(len(pvalues))  # each family's BH rejects every p-value up to the largest it rejects
    for part in (slice(0, n_single), slice(n_single, None)):
        cutoffs[part] = pvalues[part][rejected[part]].max() if rejected[part].any() else -1.0
    gaps = _rest_gap(sizes, wrong, n, total_errors)
    flagged = np.flatnonzero(rejected & (gaps >= min_gap - 1e-12))

    def record(index: int) -> dict[str, Any]:
        rows, bad = int(sizes[index]), int(wrong[index])
        rest, rest_bad = n - rows, total_errors - bad
        inside = binomial_interval(rows - bad, rows, confidence_level)
        outside = binomial_interval(rest - rest_bad, rest, confidence_level)
        return {"text": slice_text(family.conditions[index]), "conditions": family.conditions[index],
                "rows": rows, "correct": rows - bad, "accuracy": (rows - bad) / rows, "low": inside.low,
                "high": inside.high, "rest_rows": rest, "rest_correct": rest - rest_bad,
                "rest_accuracy": (rest - rest_bad) / rest, "rest_low": outside.low, "rest_high": outside.high,
                "gap": float(gaps[index]), "pvalue": float(pvalues[index]), "qvalue": float(qvalues[index])}

    groups: list[dict[str, Any]] = []
    for leader, rows_outside, pvalue_outside, same, explained in _distinct(family, flagged, pvalues, cutoffs,
                                                                          errors, min_rows, min_gap, same_rows):
        if len(groups) == max_groups:
            break
        # named by its simplest description: the fewest conditions among the slices of nearly its rows
        simplest = min([leader, *same], key=lambda i: (len(family.conditions[i]), pvalues[i]))
        others = [i for i in [leader, *same] if i != simplest]
        groups.append({**record(simplest), "rows_outside_earlier": rows_outside,
                       "pvalue_outside_earlier": pvalue_outside,
                       "same_rows": [slice_text(family.conditions[i]) for i in others[:LISTED_SAME]],
                       "n_same": len(others), "n_explained": len(explained)})
    n_groups = len(groups) if len(groups) < max_groups else sum(1 for _ in _distinct(
        family, flagged, pvalues, cutoffs, errors, min_rows, min_gap, same_rows))
    weakest = record(int(np.lexsort((pvalues, qvalues))[0])) if len(pvalues) else None
    accuracy = (n - total_errors) / n
    sizes_seen = [min_rows] + ([n // 10] if n // 10 >= 5 * min_rows else [])
    detectable = [{"rows": size, "gap": detectable_gap(n, size, accuracy, share * level / n_single, min_gap)
                   if n_single and n - size >= min_rows else None} for size in sizes_seen]
    return SliceResult(
        n=n, correct=n - total_errors, accuracy=accuracy, level=level, min_rows=min_rows, min_gap=min_gap,
        confidence_level=confidence_level, columns=[c.name for c in columns], skipped_columns=skipped,
        n_single=n_single, n_pairs=len(family.pairs), n_pair_family=family.pair_family, n_flagged=len(flagged),
        groups=groups,
        n_groups=n_groups, weakest=weakest, detectable=detectable, power=POWER,
        settings={"max_thresholds": max_thresholds, "pair_candidates": pair_candidates, "same_rows": same_rows,
                  "alpha": SLICELINE_ALPHA, "max_groups": max_groups})


def _distinct(family: _Family, flagged: np.ndarray, pvalues: np.ndarray, cutoffs: np.ndarray, errors: np.ndarray,
              min_rows: int, min_gap: float, same_rows: float) -> Iterator[tuple[int, int, float, list[int], list[int]]]:
    """The flagged slices in groups of distinct weaknesses, the most significant first.

    The first group's best slice is the flagged one with the smallest
    p-value (then the fewest conditions, then the most rows). A flagged slice
    that is no longer weak once the rows of the groups so far are left out
    (its rows outside them, against the rows outside them and it: fewer than
    ``min_rows``, a gap below ``min_gap``, or a p-value above ``cutoffs``, the
    largest one Benjamini-Hochberg rejected in its family) is explained by the group that took those
    rows; the next group's best slice is the still weak one with the smallest
    p-value outside the earlier groups. Yields, per group, its best slice,
    the rows and p-value of that slice outside the earlier groups, the other
    slices with nearly its rows (Jaccard index at least ``same_rows``) and
    the rest of those it explains.
    """
    if not len(flagged):
        return
    n, total_errors = len(errors), float(errors.sum())
    sizes, wrong = family.sizes, family.wrong
    order = flagged[np.lexsort((-sizes[flagged], [len(family.conditions[i]) for i in flagged], pvalues[flagged]))]
    candidates, current = order, pvalues[order]
    cutoff = cutoffs[order]
    rows_outside = sizes[order]
    taken = np.zeros(n, dtype=bool)
    while len(candidates):
        pick = int(np.argmin(current))
        leader = int(candidates[pick])
        leader_rows, leader_outside, leader_p = family.mask(leader), int(rows_outside[pick]), float(current[pick])
        shared = family.within(leader_rows)[candidates]
        jaccard = shared / (sizes[leader] + sizes[candidates] - shared)
        taken |= leader_rows
        size = sizes[candidates] - family.within(taken)[candidates]
        bad = wrong[candidates] - family.within(taken, errors)[candidates]
        n_left, errors_left = n - float(taken.sum()), total_errors - float(errors[taken].sum())
        p_left = fisher_greater(bad, size, errors_left, n_left) if errors_left > 0 else np.ones(len(size))
        still = ((size >= min_rows) & (n_left - size >= min_rows) & (p_left <= cutoff)
                 & (_rest_gap(size, bad, n_left, errors_left) >= min_gap - 1e-12))
        still[pick] = False
        others = [i for i in range(len(candidates)) if i != pick and not still[i]]
        same = sorted((int(candidates[i]) for i in others if jaccard[i] >= same_rows - 1e-12),
                      key=lambda i: (len(family.conditions[i]), pvalues[i]))
        explained = [int(candidates[i]) for i in others if jaccard[i] < same_rows - 1e-12]
        yield leader, leader_outside, leader_p, same, explained
        candidates, current, rows_outside, cutoff = candidates[still], p_left[still], size[still], cutoff[still]


__all__ = ["SLICELINE_ALPHA", "SliceResult", "find_weak_slices"]
