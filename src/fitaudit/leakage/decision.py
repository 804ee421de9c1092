"""The leakage question's decision: more twins than the training data's own rows have, under exchangeability.

If the scored and the training examples are drawn alike (a random split of
one data set), a scored example's distance to its nearest training example
is distributed like a training example's distance to its nearest *other*
training example (leave one out: ``m`` against ``m - 1`` candidates, a
difference of order ``1/m``). So the training data's own rows are the null:

* near twins: ``k`` of the ``n`` scored examples are within the threshold
  ``t`` of a training example; ``j`` of the ``c`` calibration rows (training
  rows, each against the others) are within ``t`` of another training row;
* exact copies: ``k_e`` of the ``n`` scored examples equal a training row;
  ``j_e`` of the ``m`` training rows equal another training row (the data's
  own duplicate rate: repeated answers of a survey, repeated images).

Each count is compared with its null by Fisher's exact test, one-sided
(Fisher 1935; the hypergeometric tail of ``k`` given ``k + j``, which
accounts for the sizes of both samples): ``P(X >= k)``,
``X ~ Hypergeometric(n + c, k + j, n)``. The question fails when either
p-value is below ``LEAKAGE_LEVEL / 2`` (Bonferroni over the two tests);
natural duplicates and natural near neighbours count as the null, not as
leaks. A scored set so small that even ``k = n`` could not reach that level
is ``inconclusive``, with the smallest size that could
(:func:`minimum_scored`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special, stats

from fitaudit.verdict import Verdict, inconclusive

#: family-wise level of the leakage question (near twins and exact copies, each tested at half of it)
LEAKAGE_LEVEL = 0.01
#: largest scored-set size :func:`minimum_scored` looks at
MAX_MINIMUM = 10**7


def excess_pvalue(k: int, n: int, j: int, c: int) -> float:
    """One-sided Fisher exact p-value that ``k`` of ``n`` exceeds ``j`` of ``c``: ``P(X >= k)``.

    ``X`` is hypergeometric: ``k + j`` marked among ``n + c`` examples, ``n``
    drawn (the conditional null of Fisher's exact test; equals
    ``scipy.stats.fisher_exact([[k, n - k], [j, c - j]], alternative="greater")``).
    """
    if k <= 0:
        return 1.0
    return float(min(1.0, max(0.0, stats.hypergeom.sf(k - 1, n + c, k + j, n))))


def _all_marked_log_pvalue(n: np.ndarray, j: int, c: int) -> np.ndarray:
    """log P(X >= n) = log C(n + j, n) - log C(n + c, n): the p-value if every one of ``n`` scored examples counted."""
    return (special.gammaln(n + j + 1) - special.gammaln(j + 1) - special.gammaln(n + c + 1)
            + special.gammaln(c + 1))


def minimum_scored(j: int, c: int, level: float) -> int | None:
    """Smallest scored-set size n for which ``k = n`` gives :func:`excess_pvalue` below ``level``.

    ``None`` when no size up to :data:`MAX_MINIMUM` could (``j = c``: every
    training row has a twin of its own).
    """
    if j >= c:
        return None
    target = np.log(level)
    low, high = 1, 1
    while _all_marked_log_pvalue(np.array(high), j, c) >= target:  # the p-value falls as n grows
        if high >= MAX_MINIMUM:
            return None
        low, high = high + 1, min(2 * high, MAX_MINIMUM)
    while low < high:
        middle = (low + high) // 2
        if _all_marked_log_pvalue(np.array(middle), j, c) < target:
            high = middle
        else:
            low = middle + 1
    return int(low)


def near_pvalue(result: Any) -> float:
    """:func:`excess_pvalue` of the near twins (exact copies included) against the calibration rows."""
    return excess_pvalue(result.n_near, result.n_scored, result.null_near, result.n_calibration)


def exact_pvalue(result: Any) -> float:
    """:func:`excess_pvalue` of the exact copies against the training rows' own duplicates."""
    return excess_pvalue(result.n_exact, result.n_scored, result.null_exact, result.n_train)


def leakage_verdict(result: Any, *, level: float = LEAKAGE_LEVEL) -> Verdict:
    """The leakage question's :class:`~fitaudit.verdict.Verdict` of a LeakageResult (module docstring).

    Reasons: ``exact_copies_beyond_duplicate_rate``, ``near_twins_beyond_null``
    (fail), ``too_few_scored`` (inconclusive), ``no_excess_twins`` (pass).
    """
    p_near, p_exact = near_pvalue(result), exact_pvalue(result)
    each = level / 2
    numbers = {
        "n_scored": result.n_scored, "n_near": result.n_near, "n_exact": result.n_exact,
        "null_near": result.null_near, "n_calibration": result.n_calibration,
        "null_exact": result.null_exact, "n_train": result.n_train,
        "near_pvalue": p_near, "exact_pvalue": p_exact, "level": level,
    }
    if p_exact < each:
        return Verdict("fail", "exact_copies_beyond_duplicate_rate", numbers)
    if p_near < each:
        return Verdict("fail", "near_twins_beyond_null", numbers)
    minimum = minimum_scored(result.null_near, result.n_calibration, each)
    if minimum is None or result.n_scored < minimum:
        return inconclusive("too_few_scored", **numbers, minimum_scored=minimum)
    return Verdict("pass", "no_excess_twins", numbers)
