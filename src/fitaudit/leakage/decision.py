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
``X ~ Hypergeometric(n + c, k + j, n)``
(:func:`fitaudit.leakage.power.excess_pvalue`). The question fails when
either p-value is below ``LEAKAGE_LEVEL / 2`` (Bonferroni over the two
tests); natural duplicates and natural near neighbours count as the null,
not as leaks.

Copies are facts, the tests are about their number. Among the listed pairs,
those beyond what the data's own repeats explain are the closest ``k - k0``
(:func:`excess_counts`): ``k0 = k* - 1`` is the largest count the data's own
repeats explain at the test's level (``k*``, the smallest count whose
p-value is below it: :func:`fitaudit.leakage.power.critical_count`), so
``k - k0 > 0`` exactly when the test fails.

*What a leak the check misses could do to the score.* A leak of a share
``s`` raises the expected accuracy by at most ``s (1 - p0)``, the room for
gain of the accuracy on the rows that are not leaked
(:func:`fitaudit.leakage.power.accuracy_bound`, from the accuracy without
the found twins; its conservative end ``accuracy_bound_high`` from the
lower end of that accuracy's exact interval). With a model, ``s`` is the
largest leaked share the near-twin count allows, a 95% upper bound
(``leaked_share_bound``: :func:`fitaudit.leakage.power.leaked_share_bound`,
the count against the calibration rows' own rate; a leaked copy, exact or
near, is a near twin; the leaked rows it counts are twins, so none hides
among the rows without a twin, and the room for gain is the error there,
at the upper limit of its exact interval for the conservative end), and
``pass`` needs ``accuracy_bound_high`` at most
:data:`MAX_BOUND_OF_HALF_WIDTH` of the half-width of the accuracy's own
interval: a bias that small leaves a 95% interval's coverage at least 92%
(docs/first-questions.md#leakage). Until issue 49's second wave ``s`` was
the detectable share (below) here too; it describes the test before any
count, and on clean splits of real tables it left small test sets
inconclusive where the count observed allows far less
(``benchmarks/validity/results/leakage_tables_bound.txt``). Without
predictions the room for gain is at most 1, and ``pass`` needs the
detectable share ``s`` (the larger of the two tests', seen with 80% power,
:func:`power_numbers`) at most :data:`MAX_UNDETECTED_SHARE`.

The verdict also says what the found twins do to the score (the accuracy
without them against the interval of the accuracy with them,
:func:`accuracy_change`). It is ``inconclusive``, never ``pass`` (and, for
the first case, never ``fail``), when

* some scored examples equal a training example while no training example
  equals another (copies the data's own repeats do not explain, too few for
  the test);
* at least :data:`MOSTLY_REPEATED` of the training rows repeat (a copy
  cannot be told from a natural repeat, and equal rows come in clusters
  the tests do not model; this is decided first, before the tests; the
  accuracy without the twins is the accuracy without the repeated rows);
* removing the twins moves the accuracy out of its interval;
* the scored set is so small that even ``k = n`` could not reach the level
  (:func:`minimum_scored`);
* the check lacks power where it matters (``low_power``): either test could
  not see even a fully leaked set, or the bound on the accuracy is above
  its limit (above). Each test has its own detectable share: leaked near
  twins (re-crops, re-encodes, noisy rows: not equal to their source) raise
  only the near count, against the data's own near-twin rate ``j / c``;
  exact copies raise the exact count, against its own repeat rate
  ``j_e / m``. The bound takes the larger.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from scipy import special

from fitaudit.leakage.power import (
    accuracy_bound,
    critical_count,
    detectable_share,
    excess_pvalue,
    leaked_share_bound,
    scored_for_share,
)
from fitaudit.verdict import Verdict, inconclusive

#: family-wise level of the leakage question (near twins and exact copies, each tested at half of it)
LEAKAGE_LEVEL = 0.01
#: largest scored-set size :func:`minimum_scored` looks at
MAX_MINIMUM = 10**7
#: without predictions: largest leaked share a ``pass`` may leave undetected (detected with 80% power,
#: :mod:`fitaudit.leakage.power`)
MAX_UNDETECTED_SHARE = 0.02
#: with predictions: largest bound on the accuracy (its conservative end) a ``pass`` may leave, as a share of the
#: half-width of the accuracy's interval (a bias of a quarter of it leaves a 95% interval at least 92% coverage)
MAX_BOUND_OF_HALF_WIDTH = 0.25
#: share of training rows equal to another at or above which a copy cannot be told from a natural repeat
MOSTLY_REPEATED = 0.5

__all__ = ["LEAKAGE_LEVEL", "MAX_BOUND_OF_HALF_WIDTH", "MAX_UNDETECTED_SHARE", "MOSTLY_REPEATED", "bound_numbers",
           "excess_counts", "excess_pvalue", "exact_pvalue", "leakage_verdict", "minimum_scored", "near_pvalue"]


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


def accuracy_change(result: Any) -> dict[str, Any]:
    """The accuracy with and without the near twins, and whether removing them moves it out of its interval.

    ``accuracy_changed`` is ``None`` without labels or when no scored example is left without a twin.
    """
    with_, without = result.accuracy, result.accuracy_without
    if with_ is None or without is None:
        return {"accuracy_changed": None}
    return {"accuracy": with_.accuracy, "accuracy_low": with_.low, "accuracy_high": with_.high,
            "accuracy_without": without.accuracy,
            "accuracy_changed": bool(not with_.low <= without.accuracy <= with_.high)}


def power_numbers(result: Any, level: float) -> dict[str, Any]:
    """The smallest leaked share each test detects with 80% power, and the scored-set size at which both would
    detect :data:`MAX_UNDETECTED_SHARE` (:mod:`fitaudit.leakage.power`).

    ``detectable_share_near``: leaked near twins against the calibration
    rows' near-twin rate; ``detectable_share_exact``: exact copies against
    the training rows' repeat rate; ``detectable_share``: the larger of the
    two (a leak of either kind that large is detected with 80% power),
    ``None`` when either test could not detect even a fully leaked set.
    A near twin that is not equal to its source raises only the near
    count, so the exact test's power says nothing about it.
    """
    return _power_numbers(int(result.n_scored), (int(result.null_near), int(result.n_calibration)),
                          (int(result.null_exact), int(result.n_train)), float(level))


@functools.lru_cache(maxsize=256)  # a result is read several times (sentence, page, JSON): counts only
def _power_numbers(n: int, near: tuple[int, int], exact: tuple[int, int], level: float) -> dict[str, Any]:
    near_share, exact_share = (detectable_share(n, j, c, level) for j, c in (near, exact))
    both = None if near_share is None or exact_share is None else max(near_share, exact_share)
    return {"detectable_share": both, "detectable_share_near": near_share, "detectable_share_exact": exact_share,
            "max_undetected_share": MAX_UNDETECTED_SHARE,
            "scored_for_power": scored_for_share(MAX_UNDETECTED_SHARE, [near, exact], level)}


def excess_counts(result: Any, level: float) -> dict[str, Any]:
    """How many twins each test leaves to the data's own repeats, and how many it does not (module docstring).

    ``explained_near`` / ``explained_exact``: the largest count whose
    one-sided p-value is not below ``level`` (``k* - 1``; every count when
    none is); ``beyond_near`` / ``beyond_exact``: the counts above them;
    ``n_beyond_repeats``: the larger, the closest pairs that are beyond
    (:meth:`fitaudit.leakage.result.LeakageResult.beyond_repeats`). All
    ``None`` when most training rows repeat (:data:`MOSTLY_REPEATED`: the
    tests do not hold there).
    """
    if result.null_exact >= MOSTLY_REPEATED * result.n_train:
        return {key: None for key in ("explained_near", "explained_exact", "beyond_near", "beyond_exact",
                                      "n_beyond_repeats")}
    n = int(result.n_scored)
    numbers: dict[str, Any] = {}
    for name, k, j, c in (("near", result.n_near, result.null_near, result.n_calibration),
                          ("exact", result.n_exact, result.null_exact, result.n_train)):
        critical = critical_count(n, int(j), int(c), level)
        numbers[f"explained_{name}"] = n if critical is None else critical - 1
        numbers[f"beyond_{name}"] = max(0, int(k) - numbers[f"explained_{name}"])
    numbers["n_beyond_repeats"] = min(int(result.n_near), max(numbers["beyond_near"], numbers["beyond_exact"]))
    return numbers


def bound_numbers(result: Any, share: float | None) -> dict[str, Any]:
    """The most a leak could raise the accuracy (:func:`fitaudit.leakage.power.accuracy_bound`), and the limit a
    ``pass`` needs (module docstring).

    With predictions the leak's share is ``leaked_share_bound``, the most
    the near-twin count allows (:func:`fitaudit.leakage.power.leaked_share_bound`);
    without, ``share`` (the detectable share). The room for gain comes from
    the accuracy without the found twins (the rows an undetected leak hides
    in); ``bound_limit`` is :data:`MAX_BOUND_OF_HALF_WIDTH` of the
    half-width of the accuracy's interval (``None`` without predictions:
    the limit is then :data:`MAX_UNDETECTED_SHARE` of ``accuracy_bound``,
    the share itself). Every bound number is ``None`` when ``share`` is
    (a test that could not see even a fully leaked set).
    """
    measured = result.accuracy
    limit = (None if measured is None
             else MAX_BOUND_OF_HALF_WIDTH * (float(measured.high) - float(measured.low)) / 2)
    numbers: dict[str, Any] = {"max_bound_of_half_width": MAX_BOUND_OF_HALF_WIDTH, "bound_limit": limit,
                               "leaked_share_bound": None}
    if share is not None and measured is not None:
        share = leaked_share_bound(int(result.n_near), int(result.n_scored), int(result.null_near),
                                   int(result.n_calibration))
        numbers["leaked_share_bound"] = share
    if share is None:
        return {**numbers, **dict.fromkeys(("accuracy_bound", "accuracy_bound_low", "accuracy_bound_high",
                                            "room_for_gain", "room_for_gain_low", "room_for_gain_high",
                                            "bound_accuracy", "bound_accuracy_low", "bound_accuracy_high"))}
    kept = result.accuracy_without if measured is not None else None
    # the share the twins allow counts leaked rows the search finds, none among the kept rows (hidden=False);
    # without predictions the room for gain is 1 either way
    bound = accuracy_bound(share, int(result.n_scored), kept, hidden=False)
    return {**numbers, **bound.to_numbers()}


def leakage_verdict(result: Any, *, level: float = LEAKAGE_LEVEL) -> Verdict:
    """The leakage question's :class:`~fitaudit.verdict.Verdict` of a LeakageResult (module docstring).

    Reasons, in the order they are tried: ``rows_mostly_repeat``
    (inconclusive: at least :data:`MOSTLY_REPEATED` of the training rows
    equal another, so a copy cannot be told from a natural repeat, and the
    repeats come in clusters of equal rows, which the tests' independent
    rows do not model: on a clean split of randhie, 97.3% of the scored rows
    against 96.6% of the training rows gave p = 0.002);
    ``exact_copies_beyond_duplicate_rate``, ``near_twins_beyond_null``
    (fail: more twins than the training data's own rows have);
    ``exact_copies_unexplained`` (inconclusive: scored examples equal a
    training example though no training example equals another, too few
    for the test); ``twins_change_accuracy``
    (inconclusive: no excess, but the accuracy without the twins is outside
    the interval of the accuracy with them); ``too_few_scored``
    (inconclusive: even ``k = n`` could not reach the level);
    ``low_power`` (inconclusive: a test could not see even a fully leaked
    set, or the conservative bound on the accuracy, ``accuracy_bound_high``,
    is above ``bound_limit``; without predictions, the detectable share is
    above :data:`MAX_UNDETECTED_SHARE`: :func:`power_numbers`,
    :func:`bound_numbers`); ``no_excess_twins`` (pass, with both tests'
    detectable shares and the bound on the accuracy).
    """
    p_near, p_exact = near_pvalue(result), exact_pvalue(result)
    each = level / 2
    numbers = {
        "n_scored": result.n_scored, "n_near": result.n_near, "n_exact": result.n_exact,
        "null_near": result.null_near, "n_calibration": result.n_calibration,
        "null_exact": result.null_exact, "n_train": result.n_train,
        "near_pvalue": p_near, "exact_pvalue": p_exact, "level": level,
        **accuracy_change(result), **power_numbers(result, each), **excess_counts(result, each),
    }
    numbers.update(bound_numbers(result, numbers["detectable_share"]))
    if result.null_exact >= MOSTLY_REPEATED * result.n_train:  # repeats in clusters: the tests' rows are not independent
        return inconclusive("rows_mostly_repeat", **numbers)
    if p_exact < each:
        return Verdict("fail", "exact_copies_beyond_duplicate_rate", numbers)
    if p_near < each:
        return Verdict("fail", "near_twins_beyond_null", numbers)
    if result.n_exact and not result.null_exact:
        return inconclusive("exact_copies_unexplained", **numbers)
    if numbers["accuracy_changed"]:
        return inconclusive("twins_change_accuracy", **numbers)
    minimum = minimum_scored(result.null_near, result.n_calibration, each)
    if minimum is None or result.n_scored < minimum:
        return inconclusive("too_few_scored", **numbers, minimum_scored=minimum)
    share, limit = numbers["detectable_share"], numbers["bound_limit"]
    if share is None or (share > MAX_UNDETECTED_SHARE if limit is None else numbers["accuracy_bound_high"] > limit):
        return inconclusive("low_power", **numbers)
    return Verdict("pass", "no_excess_twins", numbers)
