"""The words of perturbed model validation (Zhang et al. 2019): one learner's |k_S|, and PMV's choice among learners.

The decisions are :mod:`fitaudit.pmv.decision`'s; each sentence leads with
the verdict and the number that decided it. Registered in
:data:`fitaudit.report.verdicts.WORDS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from fitaudit.report.numbers import pvalue
from fitaudit.report.sentences import reason_text, said
from fitaudit.verdict import Verdict


def pmv_bound_text(result: Any) -> str:
    """``"risk bound 0.92 (delta = 0.05)"``, saying when the bound is vacuous (above 1)."""
    bound = float(result.bound)
    vacuous = " (vacuous: above 1, it bounds nothing)" if bound > 1 else ""
    return f"risk bound {bound:.2f} at delta = {result.delta:g}{vacuous}"


def say_pmv(result: Any, verdict: Verdict, **_: Any) -> str:
    """Perturbed model validation (Zhang et al. 2019): a headline (the verdict and |k_S| or the share of the
    majority-class learner's errors removed that decided it), then |k_S| with the clean training accuracy
    (the decision: :func:`fitaudit.pmv.decision.pmv_verdict`)."""
    mean = np.asarray(result.mean_accuracy, dtype=float)
    first, last = float(mean[0]), float(mean[-1])
    flipped = f"{float(np.asarray(result.rates)[-1]):.0%} flipped"
    if verdict.reason == "mutation_score":
        return said(f"Mutation score {float(result.score):.3f} (larger = better fit; it ranks learners on the same "
                    "data).", f"Training accuracy {first:.3f} on the clean labels, {last:.3f} with {flipped}.")
    k = float(result.statistic)
    numbers = (f"|k_S| = {k:.3f} with training accuracy {first:.3f} on the clean labels and {last:.3f} with {flipped}, "
               f"{pmv_bound_text(result)}")
    facts = verdict.numbers
    if verdict.reason.startswith("memorises_") and "cv_accuracy" in facts:
        return say_pmv_heldout(numbers, facts.get("threshold"), verdict.reason, facts)
    return said(*pmv_sentences(result, verdict, numbers, k))


def _majority(result: Any, facts: Mapping[str, Any]) -> str:
    """What the majority-class learner reaches (the words of two reasons)."""
    return (f"the majority-class learner reaches |k_S| = {result.baseline_statistic:.3f} by always "
            f"predicting the largest class ({facts.get('majority_share', 0):.3f} of the labels)")


def pmv_sentences(result: Any, verdict: Verdict, numbers: str, k: float) -> tuple[str, ...]:
    """The headline and details of PMV's verdict on one learner, built for the reason that decided only
    (another reason's numbers may be absent from the verdict)."""
    reason, facts = verdict.reason, verdict.numbers
    threshold = facts.get("threshold")
    gain = f"{facts.get('baseline_gain') or 0:.0%}"
    if reason == "slope_undefined":
        return ("Fails: |k_S| is undefined (some fits failed).", f"{numbers}.")
    if reason == "at_majority_baseline":
        return (
            f"Fails: the learner underfits: it removes {gain} of the majority-class learner's errors, below "
            f"{facts.get('baseline_gain_needed', 0):.0%}.",
            f"{numbers}: it fits its clean training labels no better than always predicting the largest class, so "
            f"its slope says nothing of a fit: {_majority(result, facts)}.")
    if reason == "underfits":
        return (
            f"Fails: the learner underfits: it removes {gain} of the errors of always predicting the largest class, "
            f"below {facts.get('underfit_gain', 0):.0%}.",
            f"{numbers}: it fits its clean training labels little better than always predicting the largest class; "
            "its accuracy falls as labels are flipped because it ignores them, not because its capacity fits the "
            "data (or the labels carry little signal).")
    if reason == "fits_signal":
        return (
            f"Passes: the learner fits the signal rather than the noise (|k_S| = {k:.3f} >= {threshold:g}).",
            f"{numbers}: its training accuracy falls as labels are flipped ({_majority(result, facts)}). A pass rules "
            "out memorising and fitting no more than the class sizes; it does not say this learner is the best one "
            "here (on real tables about a quarter of the passing learners were clearly worse on held-out data than "
            "the best learner of the same table): compare held-out or cross-validated accuracy for that.")
    if reason == "fits_part_of_signal":
        return (
            f"Inconclusive: the learner fits only part of its clean training labels (it removes {gain} of the "
            f"majority-class learner's errors, below {facts.get('pass_gain', 0):.0%}).",
            f"{numbers}: its training accuracy falls as labels are flipped, but PMV cannot tell a learner that "
            "underfits from labels that carry little more signal; judge it by its held-out accuracy against other "
            "learners'.")
    if reason == "memorises_labels":
        return (
            f"Inconclusive: the learner memorises its training labels (|k_S| = {k:.3f}, below {threshold:g}); PMV "
            "cannot tell whether it generalises.",
            f"{numbers}: it keeps fitting the flipped labels (random forests and boosting memorise and still "
            "generalise): judge it by its held-out accuracy.")
    if reason == "partly_memorises_labels":
        return (
            f"Inconclusive: the learner partly memorises its training labels (|k_S| = {k:.3f}, below "
            f"{threshold:g}); PMV cannot tell whether it generalises.",
            f"{numbers}: it follows the flipped labels in part: judge it by its held-out accuracy.")
    return (f"{numbers}: {reason_text(verdict)}",)


def say_pmv_heldout(numbers: str, threshold: Any, reason: str, facts: Mapping[str, Any]) -> str:
    """A memorising learner judged by its cross-validated accuracy (:func:`fitaudit.pmv.decision.heldout_verdict`):
    a headline with the accuracy that decided, then the numbers."""
    folds, rows = facts["cv_folds"], facts["cv_rows"]
    cv, majority = f"{facts['cv_accuracy']:.3f}", f"{facts['cv_majority_accuracy']:.3f}"
    measured = (f"{folds}-fold cross-validated accuracy {cv} on its {rows} training rows ({facts['cv_repeats']} "
                f"repetitions), against {majority} for the majority class (gain in [{facts['cv_gain_low']:+.3f}, "
                f"{facts['cv_gain_high']:+.3f}])")
    gap = ""
    if facts.get("cv_reference"):
        measured += f" and {facts['cv_reference_accuracy']:.3f} for a {facts['cv_reference']}"
        gap = (f"; its gap to the {facts['cv_reference']} lies in [{facts['cv_gap_low']:+.3f}, "
               f"{facts['cv_gap_high']:+.3f}] (reference minus learner)")
    measured += "; 95% intervals of the corrected resampled t-test (Nadeau and Bengio 2003)"
    memorises = (f"{numbers}: it keeps fitting the flipped labels (|k_S| below {threshold:g}), so it memorises its "
                 "training labels and PMV cannot tell whether it generalises; judged instead by the accuracy it "
                 f"would take: {measured}{gap}.")
    headline, ending = heldout_headline(reason, facts, cv, majority, rows)
    return said(headline, memorises, ending)


def heldout_headline(reason: str, facts: Mapping[str, Any], cv: str, majority: str, rows: Any) -> tuple[str, str]:
    """The headline and last sentence of a memorising learner's held-out reading, built for the reason that
    decided only (without a reference learner, the gap's numbers are absent)."""
    gap = facts.get("material_gap", 0.0)
    if reason == "memorises_no_better_than_majority":
        return (f"Fails: the learner memorises; shown less than {gap:.0%} more accurate out of fold than the "
                f"majority class ({cv} against {majority}).",
                f"One-sided p = {pvalue(facts.get('pvalue_above_majority'))} that it beats the majority class at all.")
    if reason == "memorises_cannot_tell_from_majority":
        return (f"Inconclusive: the learner memorises; not shown more accurate out of fold than the majority class "
                f"({cv} against {majority}).",
                f"A gain of {gap:.0%} or more is not ruled out: these {rows} rows cannot tell; more rows would decide.")
    if reason == "memorises_worse_than_reference":
        return (f"Fails: the learner memorises; shown over {gap:.0%} less accurate out of fold than a "
                f"{facts.get('cv_reference')} ({cv} against {facts.get('cv_reference_accuracy', 0):.3f}).",
                f"The gap's lower end {facts['cv_gap_low']:+.3f} is above {gap:.0%}: it memorises noise a simpler "
                "learner does not.")
    if reason == "memorises_cv_cannot_tell":
        return (f"Inconclusive: the learner memorises; cross-validation cannot tell a {gap:.0%} loss against a "
                f"{facts.get('cv_reference')} (gap [{facts['cv_gap_low']:+.3f}, {facts['cv_gap_high']:+.3f}]).",
                f"These {rows} rows cannot rule it out; more rows would decide.")
    if reason == "memorises_but_generalises":
        compared = (f", and less than {gap:.0%} below the {facts['cv_reference']} at most"
                    if facts.get("cv_reference") else " (no reference learner: the inputs are not numeric)")
        return (f"Passes: the learner memorises but generalises (cross-validated accuracy {cv} against {majority} "
                "for the majority class).",
                f"Shown more accurate than the majority class{compared}.")
    return (f"{reason.replace('_', ' ').capitalize()}.", "")


def say_pmv_comparison(comparison: Any, verdict: Verdict, **_: Any) -> str:
    """PMV's selection among learners trained on the same perturbed sets (a measurement)."""
    best = comparison.results[comparison.best]
    text = (f"PMV selects {comparison.best} (largest {best.criterion} score, {best.score:.3f}) among "
            f"{len(comparison.names)} learners trained on the same perturbed sets.")
    at_baseline = list(getattr(comparison, "at_baseline", []))
    if comparison.best in at_baseline:
        text += (" Every learner fits its clean labels no better than always predicting the largest class, so "
                 "no score here is evidence of a fit.")
    elif at_baseline:
        text += (f" Not selected whatever their score: {', '.join(at_baseline)}, which fit their clean labels no "
                 "better than always predicting the largest class.")
    return text + cv_check_text(verdict.numbers)


def cv_check_text(numbers: Mapping[str, Any]) -> str:
    """The cross-validation check beside PMV's choice (``cv_check=True``; empty without it)."""
    if numbers.get("cv_best") is None:
        return ""
    best, chosen = numbers["best"], numbers["cv_best"]
    if chosen == best:
        return (f" 5-fold cross-validation on the same data chooses the same learner (accuracy "
                f"{numbers['cv_accuracy_of_best']:.3f}).")
    return (f" 5-fold cross-validation on the same data chooses {chosen} (accuracy "
            f"{numbers['cv_accuracy_of_cv_best']:.3f}); PMV's choice {best} scores "
            f"{numbers['cv_accuracy_of_best']:.3f} there: PMV's choice is not the one a held-out score makes.")
