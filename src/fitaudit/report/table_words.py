"""The words of the table audit's checks (issue 48): the baseline and calibration verdicts.

Each function puts a verdict its result decided (:mod:`fitaudit.baseline.decision`,
:mod:`fitaudit.calibration.decision`) into sentences: first a short headline
(the verdict and the one number that decided it), then the details. They are
registered in :data:`fitaudit.report.verdicts.WORDS`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from fitaudit.report.numbers import pvalue
from fitaudit.verdict import Verdict


def _n(value: Any, digits: int = 3) -> str:
    if value is None or not math.isfinite(float(value)):
        return "n/a"
    return f"{float(value):.{digits}f}"


def _signed(value: Any, digits: int = 3) -> str:
    if value is None or not math.isfinite(float(value)):
        return "n/a"
    return f"{float(value):+.{digits}f}"


def _p(value: Any) -> str:
    return pvalue(value)


def _first_up(text: str) -> str:
    return text[:1].upper() + text[1:]


def _confidence(level: float) -> str:
    return f"{1 - level:.0%}"


# --------------------------------------------------------------------------- baseline


def _majority(facts: Mapping[str, Any]) -> str:
    return (f"always predicting the majority class {facts['majority_label']!r} (counted on the "
            f"{facts['majority_source']}) scores {_n(facts['majority_accuracy'])}")


def _majority_gain(facts: Mapping[str, Any]) -> str:
    return (f"gain over it {_signed(facts['accuracy'] - facts['majority_accuracy'])}, "
            f"{_confidence(facts['level'])} interval [{_signed(facts['majority_gain_low'])}, "
            f"{_signed(facts['majority_gain_high'])}]")


def _reference_difference(facts: Mapping[str, Any]) -> str:
    return (f"difference {_signed(facts['difference'])}, {_confidence(facts['level'])} interval "
            f"[{_signed(facts['difference_low'])}, {_signed(facts['difference_high'])}]")


def _reference_power(result: Any, facts: Mapping[str, Any]) -> str:
    """What the comparison with the reference could see on these rows."""
    discordant = facts["discordant"]
    if discordant == 0:
        return f"The model and the {result.reference} predict the same class on all {result.n} rows."
    if facts.get("detectable_loss") is None:
        return (f"They disagree on only {discordant} of the {result.n} rows: too few for the exact test to detect "
                "any loss with 80% power; the interval is what bounds it.")
    return (f"On the {discordant} rows where they disagree, a loss of {_n(facts['detectable_loss'])} or more is "
            "detected with 80% power.")


def say_baseline(result: Any, verdict: Verdict, **_: Any) -> str:
    """The baseline verdict (:func:`fitaudit.baseline.decision.baseline_verdict`) in words; an accuracy at or
    below chance is said after, with its likely causes (the hint of :func:`fitaudit.models.labels.chance_hint`)."""
    text = _say_baseline(result, verdict)
    if not verdict.numbers.get("at_chance"):
        return text
    hint = f" {result.chance_hint}" if result.chance_hint else ""
    return (f"{text} The accuracy {_n(result.accuracy)} is at or below chance ({_n(result.chance)}, what "
            f"predictions unrelated to the labels would score with the same class shares).{hint}")


def _say_baseline(result: Any, verdict: Verdict) -> str:
    facts = verdict.numbers
    half = facts["level"] / 2
    gap = facts["material_gap"]
    model = f"The model's accuracy on the {result.n} scored rows is {_n(result.accuracy)}"
    reference = (f"a {result.reference} fitted on the training data scores {_n(result.reference_accuracy)} on the "
                 f"same rows" if result.reference is not None else "")
    tests = (f"exact McNemar tests on the rows where the two disagree, each at {half:g} (family level "
             f"{facts['level']:g})")
    if verdict.reason == "worse_than_reference":
        return (f"Fails: the model is less accurate than a {result.reference} (accuracy difference "
                f"{_signed(facts['difference'])}). {model}; {reference} ({_reference_difference(facts)}; it wins "
                f"{result.wins_vs_reference} and loses {result.losses_vs_reference} of the rows where they disagree, "
                f"exact McNemar p = {_p(facts['pvalue_below_reference'])} < {half:g}). {_first_up(_majority(facts))}.")
    if verdict.reason == "no_better_than_majority":
        below = facts["majority_gain_high"] < 0
        shown = "shown below" if below else f"not shown above it, and shown less than {gap:g} above"
        return (f"Fails: the model is no better than always predicting the majority class (gain "
                f"{_signed(facts['accuracy'] - facts['majority_accuracy'])}). {model}; {_majority(facts)}: the "
                f"model is {shown} it ({_majority_gain(facts)}; exact McNemar p = "
                f"{_p(facts['pvalue_above_majority'])}).")
    if verdict.reason == "cannot_tell_from_majority":
        return (f"Inconclusive: the model is not shown better than always predicting the majority class (gain "
                f"{_signed(facts['accuracy'] - facts['majority_accuracy'])}). These {result.n} rows cannot rule "
                f"out a gain of {gap:g} or more. {model}; {_majority(facts)} ({_majority_gain(facts)}; exact "
                f"McNemar p = {_p(facts['pvalue_above_majority'])} >= {half:g}); more rows would decide.")
    majority_part = f"{_majority(facts)} ({_majority_gain(facts)}, exact McNemar p = " \
                    f"{_p(facts['pvalue_above_majority'])})"
    if verdict.reason == "cannot_rule_out_loss":
        return (f"Inconclusive: these rows cannot rule out a loss of {gap:g} or more against a {result.reference} "
                f"(accuracy difference {_signed(facts['difference'])}, lower end "
                f"{_signed(facts['difference_low'])}). The model is not shown worse than it. {model}; {reference} ({_reference_difference(facts)}; exact "
                f"McNemar p = {_p(facts['pvalue_below_reference'])} >= {half:g}). It beats the majority class: "
                f"{majority_part}. {_reference_power(result, facts)} More rows would decide.")
    if verdict.reason == "beats_majority":
        return (f"Passes against the majority class only (gain "
                f"{_signed(facts['accuracy'] - facts['majority_accuracy'])}, lower end "
                f"{_signed(facts['majority_gain_low'])}). {model}; {majority_part}. Not compared with a reference "
                f"learner: {result.missing}.")
    return (f"Passes: the model beats the majority class and is at most {max(0.0, -facts['difference_low']):.3f} "
            f"below a {result.reference} (accuracy difference {_signed(facts['difference'])}). {model}; "
            f"{reference} ({_reference_difference(facts)}: a loss of {gap:g} is ruled out); {majority_part}; {tests}. "
            f"{_reference_power(result, facts)}")


# --------------------------------------------------------------------------- calibration


def _ece(result: Any, facts: Mapping[str, Any]) -> str:
    return (f"ECE {_n(result.ece)} over {result.n_bins} equal-width confidence bins of the {result.n} scored rows "
            f"(debiased {_n(result.ece_debiased)}, bootstrap {_confidence(facts['level'])} interval "
            f"[{_n(result.ece_low)}, {_n(result.ece_high)}])")


def _gap(result: Any) -> str:
    return f"mean confidence {_n(result.mean_confidence)} at accuracy {_n(result.accuracy)}"


def _detectable(result: Any, facts: Mapping[str, Any]) -> str:
    if facts.get("detectable") is None:
        return f"At n = {result.n} no overconfidence is detected with 80% power."
    return (f"At n = {result.n} an overconfidence of {_n(facts['detectable'])} or more (accuracy that far below the "
            "mean confidence) is detected with 80% power.")


def say_calibration(result: Any, verdict: Verdict, **_: Any) -> str:
    """The calibration verdict (:func:`fitaudit.calibration.decision.calibration_verdict`) in words."""
    facts = verdict.numbers
    half, tolerance = facts["level"] / 2, facts["tolerance"]
    if verdict.reason in ("overconfident", "underconfident"):
        side = "below" if verdict.reason == "overconfident" else "above"
        return (f"Fails: the model is {verdict.reason}: its accuracy is {abs(facts['gap']):.3f} {side} its mean "
                f"confidence. {_first_up(_gap(result))}, beyond the {tolerance:g} tolerance (exact binomial "
                f"p = {_p(result.gap_pvalue)} < {half:g}); {_ece(result, facts)}.")
    if verdict.reason == "miscalibrated":
        return (f"Fails: the probabilities are miscalibrated across confidence bins (ECE {_n(result.ece)}). "
                f"{_first_up(_ece(result, facts))}: beyond the {tolerance:g} tolerance (consistency-resampling "
                f"p = {_p(result.ece_pvalue)} < {half:g}); overall, the {_gap(result)} are not shown more than "
                f"the tolerance apart (exact binomial p = {_p(result.gap_pvalue)}).")
    no_sign = (f"No miscalibration beyond the {tolerance:g} tolerance is shown: {_ece(result, facts)}, "
               f"consistency-resampling p = {_p(result.ece_pvalue)}; {_gap(result)}, exact binomial "
               f"p = {_p(result.gap_pvalue)} (each tested at {half:g}).")
    if verdict.reason == "cannot_tell":
        missed = "any" if facts.get("detectable") is None else f"{_n(facts['detectable'])}"
        return (f"Inconclusive: too few rows to tell (80% power needs an overconfidence of {missed}, above the "
                f"{facts['material_ece']:g} that matters). {no_sign} More rows would decide.")
    return f"Passes: no miscalibration shown (ECE {_n(result.ece)}). {no_sign} {_detectable(result, facts)}"
