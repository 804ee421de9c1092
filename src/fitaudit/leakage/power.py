"""The leakage question's excess test (Fisher's exact test, one-sided) and its power.

:func:`excess_pvalue` compares a count ``k`` of ``n`` scored examples with
the training data's own ``j`` of ``c`` (:mod:`fitaudit.leakage.decision`).

A share ``s`` of the ``n`` scored examples is *leaked* when each scored
example is, independently with probability ``s``, a copy of a training
example that the search finds (an exact copy, or a near copy within the
threshold). The others are drawn like the training data, so each counts
(is within the threshold of a training example, or equals one) with the
training data's own rate ``r = j / c`` (:mod:`fitaudit.leakage.decision`).
The count is then ``k ~ Binomial(n, q)``, ``q = s + (1 - s) r``, and
Fisher's one-sided test at ``level`` rejects when ``k >= k*``, the smallest
count whose p-value is below it (:func:`critical_count`). Its power is the
binomial tail ``P(k >= k*)`` (:func:`detection_power`; the training counts
``j`` and ``c`` are held at their observed values, as the test conditions
on them), and the detectable share is the smallest ``s`` with power of at
least :data:`POWER` (:func:`detectable_share`; Cohen, *Statistical Power
Analysis for the Behavioral Sciences*, 1988, ch. 1: the effect detected with
80% power). The question runs two tests, each with its own share: near
twins (``j`` of the ``c`` calibration rows within the threshold of another
training row) and exact copies (``j`` of the ``m`` training rows equal to
another). A leaked near twin that is not equal to its source (a re-crop, a
re-encode, a noisy row) raises the near count only, so the near test's
share is the one for such leaks, whatever the exact test's; the decision
asks both to have power (:func:`fitaudit.leakage.decision.power_numbers`).

*The leaked share the twins found allow* (:func:`leaked_share_bound`): under
the same model, ``k ~ Binomial(n, q)`` and the calibration count
``j ~ Binomial(c, r)``, so ``s = (q - r) / (1 - r)``, which grows with ``q``
and falls with ``r``. With ``q_U`` the exact (Clopper-Pearson) upper limit
of ``q``, one-sided at ``1 - SHARE_CONFIDENCE - NUISANCE_LEVEL``, and
``r_L`` the exact lower limit of ``r``, one-sided at :data:`NUISANCE_LEVEL`,
``s <= (q_U - r_L) / (1 - r_L)`` except when one of them misses: an upper
bound on the leaked share at :data:`SHARE_CONFIDENCE` (95%). This is Berger
and Boos's construction (JASA 89, 1994: the nuisance rate ``r`` maximised
over its own ``1 - gamma`` confidence set, ``gamma`` added to the level): the
training rate is estimated from many rows, so a small ``gamma`` costs little
on ``r_L``, and nearly all of the 5% goes to the scored count, whose limit
decides the bound on small scored sets (until issue 49's third wave the
5% was split 2.5% / 2.5%: 1 twin among 36 scored rows of wine allowed 14.4%
leaked, now 12.8%). It uses the count observed, where the
detectable share describes the test before any count: on a clean split with
no twin (``k = 0``), 228 scored rows allow at most 1.3% leaked, while the
test detects 4.9% with 80% power. The bound on the accuracy with a model
rests on it (:mod:`fitaudit.leakage.decision`).

*In units of the score* (:func:`accuracy_bound`): a leaked row can at most
turn a wrong answer into a right one, so a leak of a share ``s`` of the
scored examples raises the expected accuracy by at most ``s (1 - p0)``,
``p0`` the accuracy on the rows that are not leaked. ``p0`` is not observed,
but the accuracy ``A`` on the rows without a found twin bounds it. When the
share counts leaked rows the search finds (:func:`leaked_share_bound`), none
of them is among those rows, and the room for gain is ``1 - A``, whose
upper limit is the upper limit of the error among the rows without a twin.
When it counts leaked rows the search may have missed (the detectable
share, ``hidden=True``), a share ``t`` of those rows may be leaked:
``1 - A = t (1 - a_L) + (1 - t)(1 - p0) >= (1 - t)(1 - p0)``
(``a_L`` the accuracy on the leaked rows), so the room for gain is
``1 - p0 <= (1 - A) / (1 - t)``. The bound's conservative end takes the
lower end of ``A``'s exact interval (the upper end of the room for gain).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from scipy import stats

#: power at which the detectable share is stated
POWER = 0.8
#: confidence of the upper bound on the leaked share (:func:`leaked_share_bound`)
SHARE_CONFIDENCE = 0.95
#: part of ``1 - SHARE_CONFIDENCE`` spent on the training rows' own rate (Berger & Boos 1994's ``gamma``; any
#: value fixed before the counts keeps the confidence; 0.005 and 0.001 gave the same passes on the real tables of
#: ``benchmarks/validity/leakage_tables_bound.py``, 0.005 the smaller bound where the training rate is high, fair)
NUISANCE_LEVEL = 0.005
#: largest scored-set size :func:`scored_for_share` looks at
MAX_SCORED = 10**7


def excess_pvalue(k: int, n: int, j: int, c: int) -> float:
    """One-sided Fisher exact p-value that ``k`` of ``n`` exceeds ``j`` of ``c``: ``P(X >= k)``.

    ``X`` is hypergeometric: ``k + j`` marked among ``n + c`` examples, ``n``
    drawn (the conditional null of Fisher's exact test, Fisher 1935; equals
    ``scipy.stats.fisher_exact([[k, n - k], [j, c - j]], alternative="greater")``).
    """
    if k <= 0:
        return 1.0
    return float(min(1.0, max(0.0, stats.hypergeom.sf(k - 1, n + c, k + j, n))))


def critical_count(n: int, j: int, c: int, level: float) -> int | None:
    """Smallest count ``k`` of ``n`` whose one-sided Fisher p-value against ``j`` of ``c`` is below ``level``.

    The p-value falls as ``k`` grows (the tail starts later and the
    distribution shifts by less), so a bisection finds it; ``None`` when
    not even ``k = n`` is below ``level``.
    """
    if n < 1 or excess_pvalue(n, n, j, c) >= level:
        return None
    low, high = 1, n
    while low < high:
        middle = (low + high) // 2
        if excess_pvalue(middle, n, j, c) < level:
            high = middle
        else:
            low = middle + 1
    return low


def detection_power(share: float, n: int, j: int, c: int, level: float, critical: int | None = None) -> float:
    """Probability that Fisher's test rejects when a share ``share`` of ``n`` scored examples is leaked (module docstring)."""
    critical = critical_count(n, j, c, level) if critical is None else critical
    if critical is None:
        return 0.0
    rate = j / c if c else 0.0
    chance = share + (1.0 - share) * rate
    return float(stats.binom.sf(critical - 1, n, min(1.0, chance)))


def detectable_share(n: int, j: int, c: int, level: float, power: float = POWER) -> float | None:
    """Smallest leaked share detected with probability ``power`` (bisection to 1e-4); ``None``: not even all of them."""
    critical = critical_count(n, j, c, level)
    if critical is None or detection_power(1.0, n, j, c, level, critical) < power:
        return None
    low, high = 0.0, 1.0
    while high - low > 1e-4:
        middle = (low + high) / 2
        if detection_power(middle, n, j, c, level, critical) >= power:
            high = middle
        else:
            low = middle
    return high


def leaked_share_bound(k: int, n: int, j: int, c: int, confidence: float = SHARE_CONFIDENCE,
                       nuisance: float = NUISANCE_LEVEL) -> float:
    """Upper bound at ``confidence`` on the leaked share of ``n`` scored examples, ``k`` of them twins, against the
    training data's own ``j`` of ``c`` (module docstring): ``(q_U - r_L) / (1 - r_L)``, 0 at least.

    ``q_U`` is the Clopper-Pearson upper limit of ``k / n``, one-sided at
    ``1 - confidence - nuisance``, and ``r_L`` the lower limit of ``j / c``,
    one-sided at ``nuisance`` (Clopper & Pearson, Biometrika 26, 1934;
    Berger & Boos, JASA 89, 1994).

    Examples
    --------
    No twin among 228 scored rows, 2 of 341 training rows with one:

    >>> round(leaked_share_bound(0, 228, 2, 341), 4)
    0.0132
    """
    if not 0.0 < nuisance < 1.0 - confidence:
        raise ValueError(f"nuisance must lie strictly between 0 and 1 - confidence ({1.0 - confidence:g}); "
                         f"got {nuisance!r}")
    tail = 1.0 - confidence - nuisance
    high = 1.0 if k >= n else float(stats.beta.ppf(1.0 - tail, k + 1, n - k))
    low = 0.0 if j <= 0 else float(stats.beta.ppf(nuisance, j, c - j + 1))
    return max(0.0, (high - low) / (1.0 - low)) if low < 1.0 else 1.0


def scored_for_share(share: float, nulls: list[tuple[int, int]], level: float, power: float = POWER) -> int | None:
    """Smallest scored-set size at which every one of the tests (``(j, c)`` each) detects ``share`` with ``power``.

    Doubling, then bisection (power grows with ``n`` up to the binomial
    tail's small saw-tooth); ``None`` when no size up to :data:`MAX_SCORED`
    does (a training data's own rate is too close to one).
    """

    def enough(n: int) -> bool:
        return all(detection_power(share, n, j, c, level) >= power for j, c in nulls)

    high = 1
    while not enough(high):
        if high >= MAX_SCORED:
            return None
        high = min(2 * high, MAX_SCORED)
    low = high // 2 + 1
    while low < high:
        middle = (low + high) // 2
        if enough(middle):
            high = middle
        else:
            low = middle + 1
    return high


@dataclasses.dataclass(frozen=True)
class AccuracyBound:
    """The most a leak of ``share`` could raise the accuracy, with its interval (:func:`accuracy_bound`).

    Attributes
    ----------
    share : float
        The leaked share of the scored examples (with a model, the upper
        bound the twins found allow, :func:`leaked_share_bound`).
    accuracy, accuracy_low, accuracy_high : float or None
        The accuracy the room for gain rests on (on the scored examples
        without a found twin) and its exact interval; ``None`` without
        predictions.
    room_for_gain, room_for_gain_low, room_for_gain_high : float
        ``1 - p0`` (module docstring): ``(1 - A) / (1 - t)`` at the accuracy
        and at the two ends of its interval (``room_for_gain_high`` at its
        lower end), at most 1; 1 without predictions.
    bound, low, high : float
        ``share`` times the room for gain: the most the leak raises the
        expected accuracy, at the accuracy and at the ends of its interval;
        ``high`` is the conservative bound (the lower end of the accuracy).
    """

    share: float
    accuracy: float | None
    accuracy_low: float | None
    accuracy_high: float | None
    room_for_gain: float
    room_for_gain_low: float
    room_for_gain_high: float
    bound: float
    low: float
    high: float

    def to_numbers(self) -> dict[str, Any]:
        """The verdict's numbers (``accuracy_bound``, its interval and the room for gain)."""
        return {"accuracy_bound": self.bound, "accuracy_bound_low": self.low, "accuracy_bound_high": self.high,
                "room_for_gain": self.room_for_gain, "room_for_gain_low": self.room_for_gain_low,
                "room_for_gain_high": self.room_for_gain_high, "bound_accuracy": self.accuracy,
                "bound_accuracy_low": self.accuracy_low, "bound_accuracy_high": self.accuracy_high}


def accuracy_bound(share: float, n_scored: int, accuracy: Any = None, *, hidden: bool = True) -> AccuracyBound:
    """The most a leaked ``share`` of ``n_scored`` examples could raise the expected accuracy (module docstring).

    Parameters
    ----------
    share : float
        Leaked share of the scored examples, in [0, 1].
    n_scored : int
        The scored examples.
    accuracy : AccuracyResult, optional
        The accuracy on the scored examples without a found twin (``n`` of
        them). Without it the room for gain is 1 (an unknown accuracy could
        be 0).
    hidden : bool
        Whether the leaked rows may hide among those ``n`` (leaks the search
        missed, the detectable share): ``t = share * n_scored / n`` of them
        are leaked. ``False`` when the share counts leaked rows the search
        finds (:func:`leaked_share_bound`): ``t = 0``.

    Returns
    -------
    AccuracyBound
        ``bound = share * min(1, (1 - A) / (1 - t))``, and the same at the
        ends of ``A``'s exact interval (1 when ``t >= 1``; ``t = 0`` unless
        ``hidden``).

    References
    ----------
    The accuracy's interval: Clopper & Pearson, Biometrika 26, 1934. The
    share: :func:`detectable_share` (Cohen 1988, ch. 1).

    Examples
    --------
    The issue's case: 220 of 228 scored rows right, none with a twin, a
    detectable share of 4.9%:

    >>> from fitaudit.stats import accuracy
    >>> import numpy as np
    >>> y = np.r_[np.zeros(220, int), np.ones(8, int)]
    >>> b = accuracy_bound(0.049, 228, accuracy(y, np.zeros(228, int)))
    >>> round(b.bound, 4), round(b.high, 4)
    (0.0018, 0.0035)
    """
    if accuracy is None:
        return AccuracyBound(share, None, None, None, 1.0, 1.0, 1.0, share, share, share)
    kept = share * n_scored / accuracy.n if hidden else 0.0

    def room(value: float) -> float:
        return 1.0 if kept >= 1.0 else min(1.0, (1.0 - value) / (1.0 - kept))

    at, least, most = room(accuracy.accuracy), room(accuracy.high), room(accuracy.low)
    return AccuracyBound(share, float(accuracy.accuracy), float(accuracy.low), float(accuracy.high),
                         at, least, most, share * at, share * least, share * most)
