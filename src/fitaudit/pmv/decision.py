"""PMV's decision: |k_S| read together with the clean training accuracy (Zhang et al. 2019).

PMV itself ranks learners and draws no line; the thresholds here are
fitaudit's convention. A learner that ignores flipped labels and is right
on a fraction a of the clean ones has accuracy about (1 - r) a + r (1 - a)
on S_r (two classes), so |k_S| = 2a - 1: 1 on separable data, about 0.5-0.7
on noisy data such as ``make_moons(300, noise=0.3)`` (logistic regression
0.63, RBF SVM 0.73, a depth-4 tree 0.69); one that memorises every label
keeps accuracy 1 (|k_S| = 0; an unbounded tree 0.000). :data:`GOOD_FIT_SLOPE`
sits between. A steep slope is no sign of a fit when the learner does little
better than the majority-class learner (:mod:`fitaudit.pmv.baseline`: PMV's
slope gives that learner |k_S| = 2p - 1 for a majority share p, 0.80 on a
90/10 table): a learner that removes less than :data:`UNDERFIT_GAIN` of that
learner's errors on the clean training labels, (a - p) / (1 - p) with a its
clean training accuracy, underfits whatever its |k_S| (below
:data:`fitaudit.pmv.baseline.BASELINE_GAIN` it is at the baseline); one that
removes less than :data:`PASS_GAIN` of them, however steep its slope, fits
only part of the signal and is ``inconclusive``: PMV cannot tell a learner
that underfits (a depth-1 stump on iris's three classes: 0.667 clean
accuracy, share 0.5) from labels that carry little more signal (the best
held-out learners of seattle-weather: share about 0.4). The shares are
relative because an absolute cut (0.75 clean accuracy, used before) fails
the best held-out learner of a noisy many-class table and passes a learner
that barely beats a large majority class. Both were chosen on held-out
accuracy (``benchmarks/validity/pmv_heldout.py``: 9 real tables x 3 seeds x
8 learners; a learner is held-out weak when more than two standard errors
below its split's best): :data:`UNDERFIT_GAIN` as the largest cut whose fails
keep the held-out order (the failed learner worse than one not failed in 92%
of pairs; the 0.75 rule: 72%, and it failed a split's best learner 3 times
in 27), :data:`PASS_GAIN` as the one whose passes are most often within two
standard errors of the best (46 of 60; the 0.75 rule: 51 of 85). A pass
still does not pick the best held-out learner.
A learner whose |k_S| is small because it keeps fitting
the flipped labels memorises its training labels; PMV reads that as
overfitting, but forests and boosting memorise and still generalise, so
PMV alone cannot tell. Where :func:`fitaudit.pmv.pmv_score` computed the
cross-validated accuracy such a learner would take (:mod:`fitaudit.pmv.heldout`),
the verdict follows it, on the same margin of :data:`MATERIAL_GAP` either
way (each comparison the corrected resampled t-test of Nadeau and Bengio
2003 on the per-fold accuracies, its 95% interval read at both ends, each a
one-sided test at half of :data:`HELDOUT_LEVEL`): ``fail`` when the learner
is shown more than :data:`MATERIAL_GAP` less accurate than a scaled
logistic regression of the same rows (``memorises_worse_than_reference``),
or shown less than :data:`MATERIAL_GAP` more accurate than the majority
class (``memorises_no_better_than_majority``); ``pass`` when it is shown
better than the majority class and shown less than :data:`MATERIAL_GAP`
below the reference at most; ``inconclusive`` only when the folds cannot
tell: not shown better than the majority class, yet a gain of
:data:`MATERIAL_GAP` not ruled out (``memorises_cannot_tell_from_majority``),
or a loss of :data:`MATERIAL_GAP` to the reference neither ruled out nor
shown (``memorises_cv_cannot_tell``), or nothing was cross-validated. A
loss smaller than the margin is no fail: a held-out split of the sizes
users hold does not tell it from noise either (before, any loss shown by an
exact McNemar test on the pooled out-of-fold predictions failed, and failed
HistGradientBoosting on wine, penguins, breast cancer and seattle-weather
where the held-out split ranked it first). The mutation criterion (one noise rate) only ranks learners on the same data:
it is a measurement.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fitaudit.pmv.baseline import BASELINE_GAIN, at_majority_baseline, baseline_gain
from fitaudit.verdict import Verdict

#: default smallest |k_S| counted as a good fit (fitaudit's convention)
GOOD_FIT_SLOPE = 0.3

#: smallest share of the majority-class learner's clean training errors a learner must remove not to be
#: read as underfitting, whatever |k_S| (chosen on held-out accuracy: benchmarks/validity/pmv_heldout.py)
UNDERFIT_GAIN = 0.3

#: smallest share of the majority-class learner's clean training errors a learner with a good |k_S| must remove
#: for a pass; between :data:`UNDERFIT_GAIN` and this it fits part of the signal: ``inconclusive`` (chosen on
#: held-out accuracy: benchmarks/validity/pmv_heldout.py)
PASS_GAIN = 0.75

#: training accuracy (clean labels and largest noise rate) from which a small |k_S| reads as memorising
MEMORISING_ACCURACY = 0.9

#: family level of the two cross-validated comparisons of a memorising learner (each end of each 1 - level
#: interval a one-sided test at half of it)
HELDOUT_LEVEL = 0.05

#: the margin of a memorising learner's cross-validated comparisons: it passes only when shown less than this far
#: below the reference learner (upper end of the interval on the gap), fails only when shown more than this far below
#: it (lower end) or less than this far above the majority class (upper end of the interval on the gain); the same
#: three points as :data:`fitaudit.baseline.decision.MATERIAL_GAP`
MATERIAL_GAP = 0.03


def pmv_verdict(result: Any, *, threshold: float = GOOD_FIT_SLOPE, underfit_gain: float = UNDERFIT_GAIN,
                pass_gain: float = PASS_GAIN, **_: Any) -> Verdict:
    """The decision on a PMV score with smallest good |k_S| ``threshold``, and smallest shares of the
    majority-class learner's clean errors removed ``underfit_gain`` (below: fail) and ``pass_gain`` (below,
    with a good |k_S|: inconclusive); see the module docstring."""
    mean = np.asarray(result.mean_accuracy, dtype=float)
    baseline = np.asarray(result.baseline_accuracy, dtype=float)
    numbers: dict[str, Any] = {"statistic": float(result.statistic), "threshold": float(threshold),
                               "clean_accuracy": float(mean[0]), "noisiest_accuracy": float(mean[-1]),
                               "noisiest_rate": float(np.asarray(result.rates)[-1]), "bound": float(result.bound),
                               "baseline_statistic": float(result.baseline_statistic),
                               "majority_share": float(baseline[0]), "baseline_gain": baseline_gain(result)}
    if result.criterion != "pmv":
        return Verdict("info", "mutation_score", {**numbers, "score": float(result.score)})
    k, first, last = float(result.statistic), float(mean[0]), float(mean[-1])
    if not math.isfinite(k):
        return Verdict("fail", "slope_undefined", numbers)
    if at_majority_baseline(result):
        return Verdict("fail", "at_majority_baseline", {**numbers, "baseline_gain_needed": BASELINE_GAIN})
    if not numbers["baseline_gain"] >= underfit_gain:
        return Verdict("fail", "underfits", {**numbers, "underfit_gain": float(underfit_gain)})
    if k >= threshold and not numbers["baseline_gain"] >= pass_gain:
        return Verdict("inconclusive", "fits_part_of_signal", {**numbers, "pass_gain": float(pass_gain)})
    if k >= threshold:
        return Verdict("pass", "fits_signal", numbers)
    if getattr(result, "heldout", None) is not None:
        return heldout_verdict(result.heldout, numbers)
    if first >= MEMORISING_ACCURACY and last >= MEMORISING_ACCURACY:
        return Verdict("inconclusive", "memorises_labels", {**numbers, "memorising_accuracy": MEMORISING_ACCURACY})
    return Verdict("inconclusive", "partly_memorises_labels", numbers)


def heldout_verdict(check: Any, numbers: dict[str, Any]) -> Verdict:
    """The decision on a memorising learner from its cross-validated accuracy (see the module docstring)."""
    low, high = check.gap_interval(1 - HELDOUT_LEVEL)
    gain_low, gain_high = check.majority_interval(1 - HELDOUT_LEVEL)
    facts = {**numbers, "cv_accuracy": check.accuracy, "cv_majority_accuracy": check.majority_accuracy,
             "cv_reference": check.reference, "cv_reference_accuracy": check.reference_accuracy,
             "cv_gap_low": low, "cv_gap_high": high, "cv_gain_low": gain_low, "cv_gain_high": gain_high,
             "cv_rows": check.n, "cv_folds": check.folds, "cv_repeats": check.repeats,
             "material_gap": MATERIAL_GAP, "pvalue_above_majority": check.pvalue_above_majority(),
             "pvalue_below_reference": check.pvalue_below_reference(), "level": HELDOUT_LEVEL}
    if check.reference is not None and low > MATERIAL_GAP:
        return Verdict("fail", "memorises_worse_than_reference", facts)
    if gain_high < MATERIAL_GAP:
        return Verdict("fail", "memorises_no_better_than_majority", facts)
    if not gain_low > 0:
        return Verdict("inconclusive", "memorises_cannot_tell_from_majority", facts)
    if check.reference is not None and not high < MATERIAL_GAP:
        return Verdict("inconclusive", "memorises_cv_cannot_tell", facts)
    return Verdict("pass", "memorises_but_generalises", facts)


def comparison_verdict(comparison: Any, **_: Any) -> Verdict:
    """PMV's selection among learners (a measurement): the largest score among those above the
    majority-class baseline (:func:`fitaudit.pmv.compare.compare_estimators`); with the cross-validation
    check, 5-fold cross-validation's choice and the cross-validated accuracy of both choices beside it."""
    best = comparison.results[comparison.best]
    numbers: dict[str, Any] = {"best": comparison.best, "score": float(best.score), "criterion": best.criterion,
                               "candidates": len(comparison.names),
                               "at_baseline": list(getattr(comparison, "at_baseline", []))}
    if getattr(comparison, "cv_best", None) is not None:
        accuracy = dict(zip(comparison.names, np.asarray(comparison.cv_accuracy, dtype=float)))
        numbers.update(cv_best=comparison.cv_best, cv_accuracy_of_best=float(accuracy[comparison.best]),
                       cv_accuracy_of_cv_best=float(accuracy[comparison.cv_best]))
    return Verdict("info", "selection", numbers)


def pmv_contradiction(result: Any) -> str | None:
    """Where a saved PMV score disagrees with its curve: the mean accuracies, k_S, |k_S| and the bound.

    The line is refitted to the saved mean accuracies
    (:func:`fitaudit.pmv._engine.fit_line`) and the bound recomputed
    (:func:`fitaudit.pmv._engine.pmv_bound`), so an edited statistic on a
    curve that says memorisation is caught.
    """
    from fitaudit.pmv._engine import fit_line, pmv_bound
    from fitaudit.results import first_mismatch, mismatch

    rates = np.asarray(result.rates, dtype=np.float64)
    mean = np.asarray(result.mean_accuracy, dtype=np.float64)
    accuracies = np.asarray(result.accuracies, dtype=np.float64)
    if accuracies.ndim != 2 or accuracies.shape[1] != len(mean) or len(rates) != len(mean) or len(mean) < 2:
        return (f"`accuracies` of shape {accuracies.shape} does not hold one row of {len(mean)} accuracies per "
                f"repeat at the {len(rates)} rates")
    if not np.all(np.isfinite(mean)):
        return None if not np.isfinite(result.statistic) else "`statistic` is finite on a curve with failed fits"
    slope, intercept = fit_line(rates, mean)
    bound = pmv_bound(slope, result.n_train, result.delta)
    mean_problem = first_mismatch(*(mismatch(f"mean_accuracy[{i}]", mean[i], value, tolerance=1e-6)
                                    for i, value in enumerate(accuracies.mean(axis=0))))
    return first_mismatch(mean_problem, mismatch("slope", result.slope, slope, tolerance=1e-6),
                          mismatch("intercept", result.intercept, intercept, tolerance=1e-6),
                          mismatch("statistic", result.statistic, abs(slope), tolerance=1e-6),
                          mismatch("bound", result.bound, bound, tolerance=1e-6))
