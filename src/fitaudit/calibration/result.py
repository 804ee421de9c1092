"""Are the model's probabilities right? Top-label calibration error with its tests and interval.

A model is calibrated (top-label, Guo et al. [1]_) when, among the rows where
its largest probability is c, it is right a share c of the time. On n scored
rows with top-label confidence c_i and correctness a_i (prediction = argmax),
the confidences are split into ``n_bins`` **equal-width** bins of [0, 1]
(bin b = ((b - 1)/M, b/M], as Guo et al., M = 15), and

* the expected calibration error is ECE = sum_b (n_b / n) |acc_b - conf_b|,
  with acc_b and conf_b the bin's accuracy and mean confidence [1]_;
* its debiased estimate (Kumar, Liang and Ma [2]_, Sec. 5, for the l1
  error) removes the part of ECE that the bins' sampling noise alone gives:
  sum_b (n_b / n) (2 |d_b| - E|d_b + e_b|), d_b = acc_b - conf_b,
  e_b ~ N(0, acc_b (1 - acc_b) / n_b). Kumar et al. estimate the expectation by
  resampling e_b; here it is the folded-normal mean in closed form (the limit of
  their estimate as the resamples grow);
* its interval is the basic (reverse-percentile) bootstrap interval [5]_ over
  ``n_boot`` resamples of the rows: the resamples' debiased ECEs estimate the
  sample's plug-in ECE (the truth of the bootstrap world), so their spread
  around it, turned around, bounds the true ECE around the debiased estimate;
  clipped at 0. Near ECE 0 no bootstrap interval keeps its coverage (|x| is
  not smooth there; measured in ``tests/calibration``: about 0.8 for a 95%
  interval at ECE 0, 0.9 at ECE 0.03-0.08), which is why the verdict rests on
  the two tests below and the interval only describes;
* over- and underconfidence: the mean confidence against the accuracy, with
  the exact binomial test of the count right; under calibration the count is
  a sum of independent Bernoulli(c_i), whose tails the binomial with the mean
  confidence bounds (Hoeffding [3]_, Theorem 4), so the test is exact in the
  conservative sense;
* the bins' miscalibration: a consistency-resampling test [4]_ (Broecker and
  Smith): ``n_boot`` draws of a_i ~ Bernoulli(c_i) give the ECE's distribution
  under perfect calibration on these confidences; p is the share of draws at
  least as large as the observed ECE minus the tolerance (add-one Monte Carlo
  p-value). By the triangle inequality, the observed ECE is at most the true
  error plus such noise, so a model miscalibrated by at most the tolerance is
  rejected at most at the level (exactly so at tolerance 0).

The reliability diagram's data (per bin: count, mean confidence, accuracy)
are kept in the result for the report.

References
----------
.. [1] C. Guo, G. Pleiss, Y. Sun, K. Q. Weinberger, "On calibration of modern
       neural networks", ICML 2017, Sec. 2 (reliability diagrams, ECE).
.. [2] A. Kumar, P. Liang, T. Ma, "Verified uncertainty calibration",
       NeurIPS 2019, Sec. 5 (debiased estimators of the calibration error).
.. [3] W. Hoeffding, "On the distribution of the number of successes in
       independent trials", Annals of Mathematical Statistics 27(3), 1956.
.. [4] J. Broecker, L. A. Smith, "Increasing the reliability of reliability
       diagrams", Weather and Forecasting 22(3), 2007 (consistency resampling).
.. [5] A. C. Davison, D. V. Hinkley, "Bootstrap methods and their application",
       Cambridge University Press, 1997, Sec. 5.2 (the basic bootstrap interval, Eq. 5.6).

Examples
--------
>>> import numpy as np
>>> from fitaudit.calibration import calibration_check
>>> rng = np.random.default_rng(0)
>>> p = rng.uniform(0.5, 1.0, 2000)                       # calibrated: right with probability p
>>> y = np.where(rng.random(2000) < p, 1, 0)
>>> result = calibration_check(y, np.column_stack([1 - p, p]), random_state=0)
>>> result.verdict().status
'pass'
>>> sharp = np.clip(p + 0.08, 0, 1)                      # the same labels, 8 points overconfident
>>> calibration_check(y, np.column_stack([1 - sharp, sharp]), random_state=0).verdict().reason
'overconfident'
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import numpy as np
from scipy.optimize import brentq
from scipy.stats import binom, binomtest, norm

from fitaudit._errors import InputError
from fitaudit._validation import check_float, check_int
from fitaudit.random import as_seed
from fitaudit.results import Result, first_mismatch, mismatch
from fitaudit.verdict import Verdict

#: bins of the reliability diagram and the ECE (Guo et al. 2017 use 15 equal-width bins)
N_BINS = 15

#: bootstrap resamples of the rows, and draws of the perfect-calibration null
N_BOOT = 1000

#: miscalibration that counts as well calibrated: a model whose confidence is off by at most this (overall, and
#: as ECE) is failed at most at the level. Two points: Guo et al. (2017, Table 1) find temperature-scaled networks
#: at ECE 0.5-2.5% and uncalibrated ones at 3-16%; it keeps a model calibrated as well as temperature scaling
#: leaves one from failing on many rows, and is below the planted naive Bayes problem of issue 48 (6 points).
CALIBRATION_TOLERANCE = 0.02

#: power at which :meth:`CalibrationResult.detectable_overconfidence` states what the test sees
POWER = 0.8

#: rows drawn at once by the resampling loops (bounds their memory: 8 bytes each)
_CHUNK = 4_000_000


def top_label(y_true: Any, probabilities: Any) -> tuple[np.ndarray, np.ndarray, int]:
    """Top-label confidences (largest probability per row) and whether its class is the label; and k.

    ``probabilities`` is ``(n, k)`` (rows summing to 1) or ``(n,)`` (the
    probability of class 1 of two); ``y_true`` holds class indices 0..k-1.
    """
    p = np.asarray(probabilities, dtype=np.float64)
    if p.ndim == 1:
        p = np.column_stack([1.0 - p, p])
    if p.ndim != 2 or p.shape[1] < 2:
        raise InputError(f"`probabilities` must be (n, k) with k >= 2 classes, or (n,) for two; got shape {p.shape}.")
    labels = np.asarray(y_true)
    if labels.ndim != 1 or labels.shape[0] != p.shape[0]:
        raise InputError(f"`y_true` must hold one label per row of `probabilities` ({p.shape[0]}); got shape "
                         f"{labels.shape}.")
    if p.shape[0] == 0:
        raise InputError("`probabilities` has no row: nothing to calibrate.")
    if not np.issubdtype(labels.dtype, np.integer) or labels.min() < 0 or labels.max() >= p.shape[1]:
        raise InputError(f"`y_true` must be class indices 0..{p.shape[1] - 1} (the columns of `probabilities`).")
    if not np.all(np.isfinite(p)) or p.min() < 0 or p.max() > 1:
        raise InputError("`probabilities` must be finite and in [0, 1].")
    sums = p.sum(axis=1)
    if np.abs(sums - 1).max() > 1e-3:
        worst = int(np.argmax(np.abs(sums - 1)))
        raise InputError(f"`probabilities` rows must sum to 1 (row {worst} sums to {sums[worst]:.4g}): give "
                         "probabilities, not scores.")
    return p.max(axis=1), np.argmax(p, axis=1) == labels, int(p.shape[1])


def bin_index(confidence: np.ndarray, n_bins: int) -> np.ndarray:
    """Equal-width bin of each confidence: b with (b/M, (b+1)/M] holding it (0 goes to the first)."""
    return np.clip(np.ceil(confidence * n_bins).astype(np.int64) - 1, 0, n_bins - 1)


def folded_mean(d: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """E|d + e| for e ~ N(0, sigma^2) (|d| where sigma is 0): the folded normal's mean."""
    d, sigma = np.asarray(d, dtype=np.float64), np.asarray(sigma, dtype=np.float64)
    out = np.abs(d)
    positive = sigma > 0
    s, m = sigma[positive], d[positive]
    out[positive] = s * np.sqrt(2 / np.pi) * np.exp(-m ** 2 / (2 * s ** 2)) + m * (1 - 2 * norm.cdf(-m / s))
    return out


def ece_from_bins(count: np.ndarray, correct: np.ndarray, confidence_sum: np.ndarray) -> float:
    """The plug-in ECE from per-bin counts, counts right and sums of confidence (Guo et al. 2017, Eq. 3)."""
    n = count.sum(axis=-1)
    return np.abs(correct - confidence_sum).sum(axis=-1) / n


def debiased_from_bins(count: np.ndarray, correct: np.ndarray, confidence_sum: np.ndarray) -> np.ndarray:
    """Kumar et al.'s (2019) debiased l1 ECE from per-bin sums (the folded-normal form; module docstring)."""
    count = np.asarray(count, dtype=np.float64)
    filled = count > 0
    safe = np.where(filled, count, 1.0)
    accuracy, confidence = correct / safe, confidence_sum / safe
    d = np.where(filled, accuracy - confidence, 0.0)
    sigma = np.where(filled, np.sqrt(np.clip(accuracy * (1 - accuracy), 0, None) / safe), 0.0)
    terms = 2 * np.abs(d) - folded_mean(d, sigma)
    return (count * terms).sum(axis=-1) / count.sum(axis=-1)


def _binned(bins: np.ndarray, n_bins: int, weights: np.ndarray | None = None) -> np.ndarray:
    """Per-bin sums of ``weights`` (counts without), over the last axis of ``bins`` (rows of replicates)."""
    if bins.ndim == 1:
        return np.bincount(bins, weights=weights, minlength=n_bins).astype(np.float64)
    offset = bins + n_bins * np.arange(bins.shape[0])[:, None]
    flat = np.bincount(offset.ravel(), weights=None if weights is None else weights.ravel(),
                       minlength=n_bins * bins.shape[0])
    return flat.reshape(bins.shape[0], n_bins).astype(np.float64)


def bootstrap_debiased(bins: np.ndarray, correct: np.ndarray, confidence: np.ndarray, n_bins: int, n_boot: int,
                       rng: np.random.Generator) -> np.ndarray:
    """The debiased ECE of ``n_boot`` resamples of the rows (with replacement), drawn by cell.

    The ECE depends on a resample only through each cell's (bin, right or
    wrong) count and sum of confidences. The counts are drawn exactly (a
    multinomial over the cells, with their shares as probabilities); a cell's
    sum of c resampled confidences is drawn as the normal of its mean c m and
    variance c s^2 (m, s^2: the cell's mean and variance of confidence), which
    varies little: a bin is 1/M wide. Cost O(n_boot M), whatever n.
    """
    cell = 2 * bins + correct.astype(np.int64)
    size = np.bincount(cell, minlength=2 * n_bins).astype(np.float64)
    total = np.bincount(cell, weights=confidence, minlength=2 * n_bins)
    mean = np.divide(total, size, out=np.zeros_like(total), where=size > 0)
    spread = np.bincount(cell, weights=(confidence - mean[cell]) ** 2, minlength=2 * n_bins)
    variance = np.divide(spread, size, out=np.zeros_like(spread), where=size > 0)
    counts = rng.multinomial(bins.size, size / bins.size, size=n_boot).astype(np.float64)
    sums = counts * mean + np.sqrt(counts * variance) * rng.standard_normal(counts.shape)
    count = counts[:, 0::2] + counts[:, 1::2]
    return debiased_from_bins(count, counts[:, 1::2], sums[:, 0::2] + sums[:, 1::2])


def null_eces(bins: np.ndarray, confidence: np.ndarray, n_bins: int, n_draws: int,
              rng: np.random.Generator) -> np.ndarray:
    """The plug-in ECE of ``n_draws`` label draws a_i ~ Bernoulli(c_i): its distribution under calibration."""
    n = bins.size
    count, confidence_sum = _binned(bins, n_bins), _binned(bins, n_bins, confidence)
    per_chunk = max(1, _CHUNK // n)
    values = []
    for start in range(0, n_draws, per_chunk):
        draws = rng.random((min(per_chunk, n_draws - start), n)) < confidence
        right = _binned(np.broadcast_to(bins, draws.shape), n_bins, draws.astype(np.float64))
        values.append(ece_from_bins(count, right, confidence_sum))
    return np.concatenate(values)


def gap_pvalue(correct: int, n: int, mean_confidence: float, tolerance: float) -> float:
    """Two-sided exact p-value that the accuracy is more than ``tolerance`` from the mean confidence.

    Twice the smaller of the one-sided binomial p-values against
    mean confidence - tolerance (overconfident: fewer right) and + tolerance
    (underconfident), capped at 1.
    """
    over = binomtest(correct, n, mean_confidence - tolerance, alternative="less").pvalue \
        if mean_confidence - tolerance > 0 else 1.0
    under = binomtest(correct, n, mean_confidence + tolerance, alternative="greater").pvalue \
        if mean_confidence + tolerance < 1 else 1.0
    return float(min(1.0, 2 * min(over, under)))


@dataclasses.dataclass(repr=False)
class CalibrationResult(Result):
    """Top-label calibration of a model's probabilities on the scored rows (see the module docstring).

    Attributes
    ----------
    n, n_classes : int
        Rows scored, and classes.
    n_bins : int
        Equal-width bins of [0, 1].
    bin_count, bin_correct : ndarray of int
        Rows in each bin, and how many of them the model gets right.
    bin_confidence, bin_accuracy : ndarray
        Mean confidence and accuracy of each bin (NaN for an empty bin): the reliability diagram.
    ece : float
        Expected calibration error (plug-in, Guo et al. 2017).
    ece_debiased : float
        Its debiased estimate (Kumar et al. 2019); may fall below 0 when the bins' noise explains all of ECE.
    ece_low, ece_high : float
        Basic bootstrap interval of the ECE at ``1 - level`` (around ``ece_debiased``, clipped at 0).
    ece_pvalue : float
        Consistency-resampling p-value of ECE beyond ``tolerance``.
    mean_confidence, accuracy : float
        The mean top-label confidence and the accuracy.
    correct : int
        Rows right.
    gap_pvalue : float
        Exact binomial p-value that the accuracy is more than ``tolerance`` from the mean confidence.
    tolerance : float
        Miscalibration counted as calibrated (:data:`CALIBRATION_TOLERANCE`).
    level : float
        Family level of the two tests (each at half of it).
    n_boot : int
        Bootstrap resamples, and draws of the null.
    random_state : int
        Seed of both.
    """

    ALIGNED: ClassVar[tuple[tuple[str, ...], ...]] = (("bin_count", "bin_correct", "bin_confidence", "bin_accuracy"),)

    n: int
    n_classes: int
    n_bins: int
    bin_count: np.ndarray
    bin_correct: np.ndarray
    bin_confidence: np.ndarray
    bin_accuracy: np.ndarray
    ece: float
    ece_debiased: float
    ece_low: float
    ece_high: float
    ece_pvalue: float
    mean_confidence: float
    accuracy: float
    correct: int
    gap_pvalue: float
    tolerance: float = CALIBRATION_TOLERANCE
    level: float = 0.05
    n_boot: int = N_BOOT
    random_state: int = 0

    def _summary_fields(self) -> list[str]:
        return [name for name in super()._summary_fields() if not name.startswith("bin_")]

    def reliability(self) -> list[dict[str, Any]]:
        """The reliability diagram's rows: each non-empty bin's range, count, confidence, accuracy, exact interval."""
        from fitaudit.stats.intervals import binomial_interval

        rows = []
        for b in np.flatnonzero(self.bin_count):
            interval = binomial_interval(int(self.bin_correct[b]), int(self.bin_count[b]), 1 - self.level)
            rows.append({"low": b / self.n_bins, "high": (b + 1) / self.n_bins, "count": int(self.bin_count[b]),
                         "confidence": float(self.bin_confidence[b]), "accuracy": float(self.bin_accuracy[b]),
                         "accuracy_low": interval.low, "accuracy_high": interval.high})
        return rows

    def detectable_overconfidence(self, power: float = POWER) -> float:
        """Smallest overall overconfidence the gap test detects with ``power`` at this n (NaN: none).

        An accuracy of mean confidence - delta (ECE at least delta) is
        rejected with probability ``power``: the largest count right whose
        p-value (:func:`gap_pvalue`) is below half the level, and the delta
        at which Bin(n, mean confidence - delta) falls to it with that
        probability (exact binomial).
        """
        low = self.mean_confidence - self.tolerance
        if low <= 0:
            return math.nan
        rejected = np.flatnonzero(2 * binom.cdf(np.arange(self.n + 1), self.n, low) < self.level / 2)
        if rejected.size == 0:
            return math.nan
        k = int(rejected[-1])

        def shortfall(delta: float) -> float:
            return float(binom.cdf(k, self.n, max(self.mean_confidence - delta, 0.0))) - power

        if shortfall(self.mean_confidence) < 0:
            return math.nan
        return float(brentq(shortfall, 0.0, self.mean_confidence, xtol=1e-10))

    def verdict(self, **context: Any) -> Verdict:
        """The decision (:func:`fitaudit.calibration.decision.calibration_verdict`)."""
        from fitaudit.calibration.decision import calibration_verdict

        return calibration_verdict(self, **context)

    def contradiction(self) -> str | None:
        """Where the summaries disagree with the bins: the accuracy, the ECE, its debiased estimate, the gap test."""
        count, right = np.asarray(self.bin_count, dtype=np.float64), np.asarray(self.bin_correct, dtype=np.float64)
        if count.sum() != self.n or right.sum() != self.correct or np.any(right > count):
            return f"the bins hold {int(count.sum())} rows and {int(right.sum())} right, not n = {self.n} and " \
                   f"correct = {self.correct}"
        confidence_sum = np.where(count > 0, np.nan_to_num(np.asarray(self.bin_confidence, dtype=np.float64)), 0) \
            * count
        filled = count > 0
        accuracy = np.divide(right, count, out=np.full_like(count, np.nan), where=filled)
        return first_mismatch(
            mismatch("accuracy", self.accuracy, self.correct / self.n),
            *(mismatch(f"bin_accuracy[{b}]", self.bin_accuracy[b], accuracy[b]) for b in np.flatnonzero(filled)),
            mismatch("mean_confidence", self.mean_confidence, confidence_sum.sum() / self.n, tolerance=1e-6),
            mismatch("ece", self.ece, float(ece_from_bins(count, right, confidence_sum)), tolerance=1e-6),
            mismatch("ece_debiased", self.ece_debiased, float(debiased_from_bins(count, right, confidence_sum)),
                     tolerance=1e-6),
            mismatch("gap_pvalue", self.gap_pvalue, gap_pvalue(self.correct, self.n, self.mean_confidence,
                                                                self.tolerance), tolerance=1e-6))


def calibration_check(y_true: Any, probabilities: Any, *, n_bins: int = N_BINS, level: float = 0.05,
                      n_boot: int = N_BOOT, tolerance: float = CALIBRATION_TOLERANCE,
                      random_state: Any = 0) -> CalibrationResult:
    """Top-label calibration of ``probabilities`` against ``y_true`` (see the module docstring).

    Parameters
    ----------
    y_true : array-like of int, shape (n,)
        Class indices (the columns of ``probabilities``).
    probabilities : array-like, shape (n, k) or (n,)
        The model's class probabilities (rows summing to 1), or the
        probability of class 1 of two.
    n_bins : int
        Equal-width bins of [0, 1] (Guo et al. 2017: 15).
    level : float
        Family level of the two tests (each at half of it); the bootstrap
        interval is at ``1 - level``.
    n_boot : int
        Bootstrap resamples of the rows, and draws of the perfect-calibration null.
    tolerance : float
        Miscalibration counted as calibrated (overall gap and ECE); 0 tests perfect calibration.
    random_state : int, Generator or None
        Seed of the bootstrap and the null draws.

    Returns
    -------
    CalibrationResult
    """
    n_bins = check_int(n_bins, "n_bins", minimum=1)
    n_boot = check_int(n_boot, "n_boot", minimum=1)
    level = check_float(level, "level", low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    tolerance = check_float(tolerance, "tolerance", low=0.0, high=1.0, high_inclusive=False)
    seed = as_seed(random_state)
    confidence, right, n_classes = top_label(y_true, probabilities)
    bins = bin_index(confidence, n_bins)
    count = _binned(bins, n_bins)
    correct = _binned(bins, n_bins, right.astype(np.float64))
    confidence_sum = _binned(bins, n_bins, confidence)
    filled = count > 0
    n, k = int(confidence.size), int(right.sum())
    mean_confidence = float(confidence.mean())
    rng = np.random.default_rng(seed)
    replicates = bootstrap_debiased(bins, right, confidence, n_bins, n_boot, rng)
    ece = float(ece_from_bins(count, correct, confidence_sum))
    debiased = float(debiased_from_bins(count, correct, confidence_sum))
    null = null_eces(bins, confidence, n_bins, n_boot, rng)
    return CalibrationResult(
        n=n, n_classes=n_classes, n_bins=n_bins, bin_count=count.astype(np.int64),
        bin_correct=correct.astype(np.int64),
        bin_confidence=np.divide(confidence_sum, count, out=np.full(n_bins, np.nan), where=filled),
        bin_accuracy=np.divide(correct, count, out=np.full(n_bins, np.nan), where=filled),
        ece=ece, ece_debiased=debiased,
        ece_low=max(0.0, debiased + ece - float(np.quantile(replicates, 1 - level / 2))),
        ece_high=max(0.0, debiased + ece - float(np.quantile(replicates, level / 2))),
        ece_pvalue=float((1 + np.sum(null >= ece - tolerance - 1e-12)) / (1 + n_boot)),
        mean_confidence=mean_confidence, accuracy=k / n, correct=k,
        gap_pvalue=gap_pvalue(k, n, mean_confidence, tolerance), tolerance=tolerance, level=level, n_boot=n_boot,
        random_state=seed)


__all__ = ["CALIBRATION_TOLERANCE", "N_BINS", "N_BOOT", "POWER", "CalibrationResult", "bin_index",
           "calibration_check", "debiased_from_bins", "ece_from_bins", "folded_mean", "gap_pvalue", "top_label"]
