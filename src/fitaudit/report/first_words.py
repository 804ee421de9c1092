"""The words of the first questions (docs/first-questions.md): the accuracy's precision, leakage, agreement.

Each function puts the result's own verdict (:mod:`fitaudit.stats.decision`,
:mod:`fitaudit.leakage.decision`, :meth:`fitaudit.stats.agreement.AgreementResult.verdict`)
into words: a short headline with the verdict and the number that decided it,
then the details. Registered in :data:`fitaudit.report.verdicts.WORDS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fitaudit.report.numbers import pvalue
from fitaudit.report.sentences import accuracy_text, interval_text, reason_text, said
from fitaudit.verdict import Verdict


def say_accuracy(result: Any, verdict: Verdict, **_: Any) -> str:
    """How precise the measured accuracy is: k/n with its exact interval in the headline, then the weakest class."""
    headline = f"Accuracy on the {result.n} scored examples: {accuracy_text(result)}, exact (Clopper-Pearson)."
    details = []
    scored = [c for c in range(len(result.class_total)) if result.class_total[c] > 0]
    if len(scored) > 1:
        worst = min(scored, key=lambda c: result.class_correct[c] / result.class_total[c])
        details.append(f"Weakest class {result.class_name(worst)!r}: "
                       f"{result.class_correct[worst] / result.class_total[worst]:.3f} "
                       f"({result.class_correct[worst]} of {result.class_total[worst]}; "
                       f"{interval_text(result.class_low[worst], result.class_high[worst], result.confidence_level)})")
    empty = result.empty_classes()
    if empty:
        details.append(f"no scored example of class(es) {', '.join(repr(result.class_name(c)) for c in empty)}")
    text = "; ".join(details)
    return said(headline, text[:1].upper() + text[1:] + "." if text else "")




def _share(count: int, total: int) -> str:
    return f"{count} of {total} ({count / total:.2%})" if total else f"{count} of {total}"




def _left_out(result: Any) -> str:
    left_out = getattr(result, "left_out_columns", None) or {}
    if not left_out:
        return ""
    named = ", ".join(f"{name!r} ({why})" for name, why in left_out.items())
    return f" Left out of the distance as identifier-like: {named}."




def _small(value: float) -> str:
    """A bound on the accuracy, two significant digits: ``0.0035``, ``0.028``."""
    return f"{value:.2g}"




def _twins(result: Any) -> str:
    """``"3 of 228 scored examples have a twin in training (1 an exact copy)"``."""
    exact = f" ({result.n_exact} an exact copy)" if result.n_exact == 1 else (
        f" ({result.n_exact} of them exact copies)" if result.n_exact else "")
    verb = "has" if result.n_near == 1 else "have"
    return f"{result.n_near} of {result.n_scored} scored examples {verb} a twin in training{exact}"




def _score_effect(numbers: Mapping[str, Any]) -> str:
    """Whether removing the twins moves the accuracy out of its interval (:func:`fitaudit.leakage.decision.accuracy_change`)."""
    changed = numbers.get("accuracy_changed")
    if changed is None:
        return ""
    interval = f"{numbers['accuracy_low']:.3f}-{numbers['accuracy_high']:.3f}"
    if changed:
        return f"; removing them moves the accuracy out of its interval ({numbers['accuracy_without']:.3f} outside {interval})"
    return f"; removing them leaves the accuracy within its interval ({numbers['accuracy_without']:.3f} in {interval})"




def _power(numbers: Mapping[str, Any]) -> str:
    """What each test could see (:func:`fitaudit.leakage.decision.power_numbers`): leaked near twins by the
    near test, exact copies by the exact test; the share both see."""
    near, exact = numbers.get("detectable_share_near"), numbers.get("detectable_share_exact")
    if near is None or exact is None:
        blind = " and ".join(name for name, share in (("near-twin", near), ("exact-copy", exact)) if share is None)
        return (f"the {blind} test{'s' if ' and ' in blind else ''} could not detect even a fully leaked "
                f"scored set with 80% power at n = {numbers['n_scored']}")
    return (f"the check detects a leaked share of {numbers['detectable_share']:.1%} or more with 80% power (near "
            f"twins from {near:.1%}, exact copies from {exact:.1%}) at n = {numbers['n_scored']}")




def _bound(result: Any, numbers: Mapping[str, Any]) -> str:
    """The bound on the accuracy and the rule it meets or not (:func:`fitaudit.leakage.decision.bound_numbers`)."""
    power = _power(numbers)
    if numbers.get("accuracy_bound") is None:
        return f"Power: {power}, so no bound on the accuracy can be given."
    share, limit = numbers["detectable_share"], numbers["bound_limit"]
    if limit is None:
        need = (f"about {numbers['scored_for_power']} scored examples would detect "
                f"{numbers['max_undetected_share']:.0%}" if numbers.get("scored_for_power") is not None
                else f"no number of scored examples would detect {numbers['max_undetected_share']:.0%} against the "
                     f"training data's own {_share(result.null_near, result.n_calibration)} near and "
                     f"{_share(result.null_exact, result.n_train)} repeated rows")
        return (f"Power: {power}. Without predictions the accuracy is unknown, so a leak that large could raise it "
                f"by up to the share itself, {share:.1%}; a pass needs {numbers['max_undetected_share']:.0%} or "
                f"less; {need}.")
    allowed = numbers["leaked_share_bound"]
    share_text = (f"the {result.n_near} twins found allow at most {allowed:.1%} of the scored examples to be leaked "
                  "(a 95% upper bound from the near-twin count against the training rows' own rate)")
    if numbers.get("bound_accuracy") is None:
        return (f"Power: {power}; {share_text}; no scored example is left without a twin, so the room for gain is 1 "
                f"and the bound is that share itself, {_small(numbers['accuracy_bound_high'])}; a pass needs at most "
                f"a quarter of the accuracy interval's half-width ({_small(limit)}).")
    return (f"Power: {power}; {share_text}, and a leaked row at most turns a wrong answer right, so a leak raises "
            f"the accuracy by at most {allowed:.1%} x the room for gain: {_small(numbers['accuracy_bound'])} at the "
            f"accuracy without the twins ({numbers['bound_accuracy']:.3f}), {_small(numbers['accuracy_bound_high'])} "
            f"at the lower end of its interval ({numbers['bound_accuracy_low']:.3f}; the bound stated); a pass needs "
            f"at most a quarter of the accuracy interval's half-width ({_small(limit)}).")




def _beyond(result: Any, numbers: Mapping[str, Any]) -> str:
    """How many of the pairs are beyond the data's own repeats (:func:`fitaudit.leakage.decision.excess_counts`)."""
    count = numbers.get("n_beyond_repeats")
    if not count:
        return ""
    return (f" The closest {count} pair{'s are' if count > 1 else ' is'} beyond what the data's own repeats explain "
            f"(its rate gives up to {numbers['explained_near']} twins and {numbers['explained_exact']} exact copies "
            "by chance, at the test's level), marked in the pairs.")




def _undetected(numbers: Mapping[str, Any]) -> str:
    """The headline's bound: what an undetected leak could do to the accuracy (:func:`_bound` has the details)."""
    high, limit = numbers["accuracy_bound_high"], numbers["bound_limit"]
    if limit is not None:
        return f"an undetected leak could raise the accuracy by {'at most' if high <= limit else 'up to'} {_small(high)}"
    most = "at most" if high <= numbers["max_undetected_share"] else "up to"
    return f"without predictions, a missed leak could raise the accuracy by {most} its share, {high:.1%}"




def _headline(result: Any, verdict: Verdict) -> tuple[str, str] | None:
    """The verdict and the one number that decided it in a short sentence, and the sentence of the counts behind
    it (``None``: a reason not known here)."""
    numbers, twins = verdict.numbers, _twins(result)
    counted = f"{result.n_near} of {result.n_scored} scored examples have a twin in training"
    explained = f"{twins[:1].upper()}{twins[1:]}, no more than the training data's own repeats explain."
    reason = verdict.reason
    if reason == "exact_copies_beyond_duplicate_rate":
        return (f"Leakage: {counted}, {numbers['n_beyond_repeats']} more than the training data's own repeats explain.",
                f"Scored examples were in the training data: {twins}.")
    if reason == "near_twins_beyond_null":
        return (f"Leakage: {counted}, {numbers['n_beyond_repeats']} more than the training data's own rows have.",
                f"The scored data overlaps the training data: {twins}.")
    if reason == "exact_copies_unexplained":
        return (f"Inconclusive: {result.n_exact} scored example(s) equal a training example, though no training "
                "example equals another.",
                "Copies the data's own repeats do not explain, too few for the test to call an excess; find where "
                "they came from (pairs below).")
    if reason == "rows_mostly_repeat":
        return (f"Inconclusive: {_share(result.null_exact, result.n_train)} training rows equal another, so a copy "
                "cannot be told from a natural repeat.", f"{twins[:1].upper()}{twins[1:]}.")
    if reason == "twins_change_accuracy":
        return (f"Inconclusive: removing the {result.n_near} twins moves the accuracy out of its interval "
                f"({numbers['accuracy_without']:.3f} outside {numbers['accuracy_low']:.3f}-"
                f"{numbers['accuracy_high']:.3f}).",
                f"{explained[:-1]}, but the score rests on rows at or near training rows.")
    if reason == "too_few_scored":
        minimum = numbers["minimum_scored"]
        need = ("no scored set could show an excess" if minimum is None
                else f"at least {minimum} scored examples are needed")
        return (f"Inconclusive: too few scored examples to tell ({result.n_scored}; {need}).",
                f"Even if all {result.n_scored} were twins the excess would not reach {numbers['level'] / 2:g}.")
    if reason == "low_power":
        if numbers["accuracy_bound_high"] is None:
            return (f"Inconclusive: the check could not see even a fully leaked set of {result.n_scored} scored "
                    "examples.", explained)
        allowed = numbers["bound_limit"]
        allowed_text = _small(allowed) if allowed is not None else f"{numbers['max_undetected_share']:.0%}"
        return f"Inconclusive: {_undetected(numbers)}, more than a pass allows ({allowed_text}).", explained
    if reason == "no_excess_twins":
        return f"No sign of leakage: {_undetected(numbers)}.", explained
    return None




def say_leakage(result: Any, verdict: Verdict, **_: Any) -> str:
    """Did the scored data leak into training: a headline (the verdict and the count of twins beyond the data's own
    repeats, or the most an undetected leak could raise the accuracy), then the details: the twins beside the
    training data's own, the pairs beyond them, the accuracy with and without the twins, and the bound with the
    rule it meets.

    The decision is the result's own (:func:`fitaudit.leakage.decision.leakage_verdict`): the scored set's near
    twins and exact copies against the training rows' own (each against the others), by Fisher's exact test;
    without an excess, ``pass`` needs the bound on the accuracy (:func:`fitaudit.leakage.power.accuracy_bound`)
    small against the accuracy's interval (without predictions: the detectable share at most
    ``max_undetected_share``), and copies the data's own repeats cannot explain, rows that mostly repeat or an
    accuracy that moves without the twins are inconclusive.
    """
    numbers = verdict.numbers
    worded = _headline(result, verdict)
    if worded is None:
        return f"{_twins(result)}: {reason_text(verdict)}"
    headline, counts = worded
    tests = (f"p = {pvalue(numbers['near_pvalue'])} near, {pvalue(numbers['exact_pvalue'])} exact; "
             f"each tested at {numbers['level'] / 2:g}")
    details = (f" Details: {_share(result.n_near, result.n_scored)} scored examples are within {result.threshold:.4g} "
               f"of a training example ({result.space}), {result.n_exact} of them equal to a training row; of the "
               f"training data's own rows, each against the others, {_share(result.null_near, result.n_calibration)} "
               f"are that close and {_share(result.null_exact, result.n_train)} equal another row ({tests}).")
    if verdict.reason != "rows_mostly_repeat":
        details += _beyond(result, numbers)
    if result.accuracy is not None:
        details += f" Accuracy with the twins {accuracy_text(result.accuracy)}"
        if verdict.reason == "rows_mostly_repeat" and result.accuracy_without is not None:
            details += (f"; without the rows that repeat or nearly repeat a training row "
                        f"{accuracy_text(result.accuracy_without)}.")
        elif result.accuracy_without is not None:
            details += f", without them {accuracy_text(result.accuracy_without)}{_score_effect(numbers)}."
        else:
            details += ", none left without them."
    if verdict.reason == "rows_mostly_repeat":
        details += (" The tests, which take rows as independent, do not hold for clusters of equal rows. "
                    + _bound(result, numbers))
    elif verdict.reason not in ("exact_copies_unexplained", "too_few_scored"):
        details += " " + _bound(result, numbers)
    return said(headline, counts, details + _left_out(result))




def say_agreement(result: Any, verdict: Verdict, **_: Any) -> str:
    """Do independent runs agree: 1 - disagreement beside the measured accuracy (Jiang et al., ICLR 2022), the
    verdict with both numbers in the headline.

    Puts :meth:`fitaudit.stats.agreement.AgreementResult.verdict` into
    words: ``fail`` when the measured accuracy is above the agreement
    estimate beyond both intervals (a sign of choosing the model by its
    score on the scored data); ``pass`` only when the check could see a
    selection gain of the relevant size; otherwise (``inconclusive``) the
    smallest gain it could see is stated, or that the runs nearly never
    disagree. It cannot see training on the scored data itself.
    """
    level = result.confidence_level
    estimate = (f"{result.estimate:.3f} ({result.agree} of {result.n} inputs agree; "
                f"{interval_text(result.low, result.high, level)})")
    if result.measured is None:
        return said(f"Another run of the training agrees with this one on {result.estimate:.3f} of the inputs: its "
                    "label-free accuracy estimate.", f"Agreement {estimate}.")
    gain = verdict.numbers.get("detectable_gain")
    power = f"{verdict.numbers.get('power', 0.0):.0%}"
    seen = (f"at n = {result.n} it sees a selection gain of {gain:.3f} or more with {power} probability"
            if gain is not None else f"at n = {result.n} no selection gain can be seen with {power} probability")
    measured = accuracy_text(result.measured)
    both = f"(measured {result.measured.accuracy:.3f}, agreement estimate {result.estimate:.3f})"
    sentences = {
        "measured_above_estimate": (
            f"Fails: the measured accuracy is above the agreement estimate beyond both intervals {both}.",
            f"Measured accuracy {measured}, agreement estimate {estimate}: a sign that the model or its settings "
            "were chosen by their score on this data."),
        "runs_nearly_never_disagree": (
            f"Inconclusive: the runs nearly never disagree ({result.estimate:.3f} agree), so their agreement cannot "
            "estimate accuracy.",
            f"They agree on {estimate} while the model errs on {1 - result.measured.accuracy:.3f} of the inputs "
            f"(measured accuracy {measured}): they are too alike (copies, or seeds of a model that barely depends "
            "on its seed) for their agreement to estimate accuracy, so this check says nothing here."),
        "gain_below_detection": (
            f"Inconclusive: the check sees only a selection gain of {gain:.3f} or more, above the "
            f"{verdict.numbers.get('relevant_gain', 0.0):.3f} that matters." if gain is not None else
            f"Inconclusive: the check cannot see a selection gain at n = {result.n}.",
            f"Measured accuracy {measured} is not above the agreement estimate {estimate} beyond both intervals, "
            f"but {seen}: a choice by the score on this data that gained less would not show (more scored "
            "examples would)."),
        "no_selection_seen": (
            f"Passes: no sign of choosing by the score on this data {both}.",
            f"Measured accuracy {measured} is not above the agreement estimate {estimate} beyond both intervals, "
            f"and {seen} (training on it would not show here)."),
    }
    return said(*sentences.get(verdict.reason, (f"Measured accuracy {measured} beside the agreement estimate "
                                                f"{estimate}: {reason_text(verdict)}",)))
