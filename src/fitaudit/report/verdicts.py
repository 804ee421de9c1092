"""Every verdict in words: the one sentence, with the numbers behind it, of every result.

Each instrument decides its own :class:`~fitaudit.verdict.Verdict`
(``result.verdict(**context)``, implemented in the instrument's package:
:mod:`fitaudit.overfit.decision`, :mod:`fitaudit.leakage.decision`,
:mod:`fitaudit.examine.decision`, :mod:`fitaudit.pmv.decision`, ...). This
module only puts a verdict into words: :func:`read` asks the result for its
verdict and the registered words of its type for the sentence, so the CLI
summaries, the audit's parts, the HTML report and the demo cannot disagree,
and a reading's status is always its verdict's.

What a verdict depends on besides the result (the role of the data, a
threshold) is passed as keyword ``context``; the audit keeps it in its
part's ``settings`` (:data:`fitaudit.auditing.result.CONTEXT_KEYS`), so a report rebuilt from a file
decides every part again from its evidence (:func:`read_part`) and never
takes a status or a sentence from the file.

Adding the words of a new result type (whose class has ``verdict()``): a
function here, ::

    def say_my_result(result, verdict, **context):
        if verdict.status == "fail":
            return said(f"Fails: ... (p = {pvalue(result.pvalue)} < {verdict.numbers['level']:g}).", "Details ...")
        return said(f"Passes: ... (p = {pvalue(result.pvalue)} >= {verdict.numbers['level']:g}).", "Details ...")

(the first sentence is the headline: the verdict and the one number that
decides it, at most 20 words; :func:`said` joins it to the details), its line ``"MyResult": say_my_result`` in :data:`WORDS` (a plain dict at the
end of this module), and a case in ``tests/report/test_verdicts.py`` (every
type in :data:`WORDS` must appear in its agreement test).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

from fitaudit._errors import InputError
from fitaudit.auditing.result import part_context
from fitaudit.models.labels import CHANCE_CONFIDENCE
from fitaudit.report.numbers import fixed, pvalue
from fitaudit.report.table_words import say_baseline, say_calibration
from fitaudit.verdict import STATUSES, Verdict

#: statuses a reading can give (a part may also be ``skipped``: it has no result to read)
READING_STATUSES = tuple(s for s in STATUSES if s != "skipped")


class Reading(NamedTuple):
    """A result in words: ``status`` (its verdict's, one of :data:`READING_STATUSES`) and ``sentence``.

    The sentence leads with its :attr:`headline` (the verdict and the one
    number that decides it); the :attr:`details` follow.
    """

    status: str
    sentence: str

    @property
    def headline(self) -> str:
        """The sentence's first sentence: the verdict and its deciding number (:func:`split_headline`)."""
        return split_headline(self.sentence)[0]

    @property
    def details(self) -> str:
        """What follows the headline (``""`` where the headline says all)."""
        return split_headline(self.sentence)[1]


#: a full stop that ends no sentence: an abbreviation
_ABBREVIATIONS = ("e.g.", "i.e.", "al.", "vs.", "cf.")


def split_headline(sentence: str) -> tuple[str, str]:
    """(headline, details) of a reading's sentence: the headline is its first sentence.

    A sentence ends at ``.``, ``!`` or ``?`` outside brackets, followed by
    a space and a capital, a digit or ``|`` (``|k_S|``); a decimal point or
    an abbreviation (:data:`_ABBREVIATIONS`) ends none.
    """
    depth = 0
    for i, char in enumerate(sentence):
        if char in "([":
            depth += 1
        elif char in ")]":
            depth = max(0, depth - 1)
        elif (char in ".!?" and depth == 0 and sentence[i + 1:i + 2] == " "
              and (sentence[i + 2:i + 3].isupper() or sentence[i + 2:i + 3].isdigit() or sentence[i + 2:i + 3] == "|")
              and sentence[:i + 1].split()[-1].lstrip("(") not in _ABBREVIATIONS):
            return sentence[:i + 1], sentence[i + 2:].strip()
    return sentence, ""


def said(headline: str, *details: str) -> str:
    """A reading's sentence: the headline, then the details (empty ones left out)."""
    return " ".join(part.strip() for part in (headline, *details) if part and part.strip())


def said_lines(reading: Reading, indent: str = "") -> list[str]:
    """A reading as the command line prints it: the headline on its line, the details on the next."""
    return [reading.headline] + ([indent + reading.details] if reading.details else [])


#: the words of a result type: ``function(result, verdict, **context) -> sentence``
Words = Callable[..., str]

def readable_types() -> list[str]:
    """Result types with words (:data:`WORDS`)."""
    return sorted(WORDS)


def _words_of(result: Any) -> Words:
    for cls in type(result).__mro__:
        function = WORDS.get(cls.__name__)
        if function is not None:
            return function
    raise InputError(f"no reading of {type(result).__name__} (readable: {', '.join(readable_types())}).")


def say(result: Any, verdict: Verdict, **context: Any) -> str:
    """The sentence putting ``verdict`` (the result's own decision) into words."""
    return _words_of(result)(result, verdict, **context)


def read(result: Any, **context: Any) -> Reading:
    """The reading of ``result``: its own verdict's status, and that verdict in words."""
    function = _words_of(result)
    verdict = result.verdict(**context)
    return Reading(verdict.status, function(result, verdict, **context))


def verdict_json(result: Any, summary: Callable[[Any], str] | None = None, **context: Any) -> dict[str, Any]:
    """The machine-readable verdict of a command's result: ``{"status", "reason", "numbers", "sentence"}``.

    The contract of every command's ``--json`` (its top-level ``"verdict"``,
    see the user guide's *Verdicts for scripts and CI*): a result that
    decides (``result.verdict()``) gives its verdict and the words of it; a
    command whose output is a made thing or a listing, not a judgement
    (``shapes``, ``measures list``, ``pgdl zoo build``, ``reproduce``, ...),
    gives ``info`` with reason ``no_judgement`` and its summary's first line.
    """
    if callable(getattr(result, "verdict", None)):
        verdict = result.verdict(**context)
        try:
            sentence = say(result, verdict, **context)
        except InputError:  # a deciding result without registered words: its command's summary
            sentence = _first_line(result, summary)
    else:
        verdict = Verdict("info", "no_judgement")
        sentence = _first_line(result, summary)
    return {**verdict.to_dict(), "sentence": sentence}


def _first_line(result: Any, summary: Callable[[Any], str] | None) -> str:
    text = summary(result) if summary is not None else ""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def read_part(part: Any) -> Reading:
    """The reading of an audit part's result (a part without a result keeps its own words)."""
    if part.result is None:
        return Reading(part.status, part.sentence)
    return read(part.result, **part_context(part.settings))


def word_parts(parts: Any) -> Any:
    """Every part's verdict put into words, in place (a part with a result gets the sentence of :func:`say`;
    a skipped part keeps its reason); returns ``parts``."""
    for part in parts:
        if part.result is not None:
            context = part_context(part.settings)
            part.verdict = dataclasses.replace(part.verdict, sentence=say(part.result, part.verdict, **context))
    return parts


def word_audit(result: Any) -> Any:
    """``result`` (an audit) with every part's verdict put into words, in place; returns it.

    The audit decides (each part's verdict is its result's own); this layer
    words (:func:`word_parts`). Called by :func:`fitaudit.audit`, the demo,
    every page and file drawn of an audit and every reader of a saved one,
    so each part a user sees has its sentence.
    """
    word_parts(result.parts)
    return result


# --------------------------------------------------------------------------- formatting


# --------------------------------------------------------------------------- overfitting test


#: what makes the translational test apply, said where (G3) fails
G3_ADVICE = ("The test applies to images whose objects may sit anywhere in the frame: crops of larger scenes "
             "(resize larger than the crop, objects not centred), or objects placed at random positions.")


def g3_sentence(g3: Any) -> str:
    """Why (G3) fails, in one sentence with its numbers: the check's test rejects it at its level."""
    return (f"The objects in these images sit in a preferred place (e.g. centred): a classifier tells the AEG's "
            f"shifted crops from the centre crops {g3.accuracy:.1%} of the time ({g3.statistic} of {g3.n_test} "
            f"held-out crops, at least {g3.low:.1%} at {1 - g3.level:.0%} confidence, above the 50% of chance: "
            f"p = {pvalue(g3.pvalue)} < {g3.level:g}), so the test's assumption G3 fails")


def g3_line(g3: Any, guide: str) -> str:
    """The (G3) check in one line (or that it was not made), pointing to ``guide`` for how to read it."""
    from fitaudit.overfit.decision import g3_rejects

    if g3 is None:
        return f"Valid only if shifting an image keeps its density (G3), which was not checked; see {guide}."
    outcome = "fails" if g3_rejects(g3) else "holds (no sign against it)"
    return (f"G3 check ({g3.n_images} images): a classifier tells shifted from centre crops {g3.accuracy:.1%} of "
            f"the time ({g3.statistic} of {g3.n_test}, at least {g3.low:.1%} at {1 - g3.level:.0%} confidence, "
            f"p = {pvalue(g3.pvalue)}; G3 fails when p < {g3.level:g}, that is when the bound lies above the 50% "
            f"of chance): G3 {outcome}; see {guide}.")


def chance_sentence(chance: Any) -> str:
    """Why a model at chance stops a verdict, naming the likely causes."""
    return (f"The model's accuracy on these {chance.n} examples, {chance.accuracy:.3f}, is at or below chance "
            f"({chance.chance:.3f}, what predictions unrelated to the labels would score), so it was not tested: "
            "the labels are likely not the model's classes in its order (give them with --classes), or the images "
            "are not prepared as the model expects (pipeline, channels), or the labels are wrong")


def not_above_chance_sentence(chance: Any) -> str:
    """Why a model whose kappa is above 0 by luck alone (its lower bound is not) stops a verdict."""
    return (f"The model's accuracy on these {chance.n} examples, {chance.accuracy:.3f}, is not shown above chance "
            f"({chance.chance:.3f}): Cohen's kappa {chance.kappa:.3f}, its {CHANCE_CONFIDENCE:.0%} lower bound "
            f"{chance.kappa_low:.3f} is not above 0, so it was not tested: an untrained model, wrong labels or "
            "pipeline, or too few examples to tell a weak model from chance")


def inconclusive_words(result: Any, verdict: Verdict) -> str | None:
    """The words of an overfitting verdict stopped before its test was read (None for the others): a headline
    with the number that stopped it, then why."""
    if verdict.reason == "g3_violated":
        g3 = result.g3
        return said(f"Inconclusive: the images break the test's assumption G3 (shifted crops told from centred ones "
                    f"{g3.accuracy:.1%} of the time, p = {pvalue(g3.pvalue)} < {g3.level:g}).",
                    f"{g3_sentence(g3)} and its p-value (p = {pvalue(result.pvalue)}) means nothing here.", G3_ADVICE)
    if verdict.reason == "accuracy_at_chance":
        chance = result.chance
        return said(f"Inconclusive: accuracy {chance.accuracy:.3f} is at or below chance ({chance.chance:.3f}), so the "
                    "model was not tested.", f"{chance_sentence(chance)}.")
    if verdict.reason == "accuracy_not_shown_above_chance":
        chance = result.chance
        return said(f"Inconclusive: accuracy {chance.accuracy:.3f} is not shown above chance (kappa's lower bound "
                    f"{chance.kappa_low:.3f} is not above 0).", f"{not_above_chance_sentence(chance)}.")
    return None


def reason_text(verdict: Verdict) -> str:
    """A verdict whose reason its type's words do not know, in plain words: ``"inconclusive: g3 violated
    (level = 0.05)"``. Used by the words of every type as their last resort, so a new reason in an
    instrument's decision is never silently worded as another."""
    numbers = ", ".join(f"{k} = {v:.4g}" if isinstance(v, float) else f"{k} = {v}" for k, v in verdict.numbers.items())
    return f"{verdict.status}: {verdict.reason.replace('_', ' ')}" + (f" ({numbers})." if numbers else ".")


def say_overfit(result: Any, verdict: Verdict, **_: Any) -> str:
    """The overfitting test (Werpachowski et al. 2019) of a model on its scored or training data: a headline
    (the verdict and its p-value against the level), then the error rate, adversarial risk and power.

    On the scored data a rejection fails (the model depends on the data it is
    scored on); on the training data it is a measurement (rejection is
    expected there and shows that the test has power). Where the test's
    assumptions fail (:func:`fitaudit.overfit.decision.overfit_verdict`) it
    is inconclusive. A pass without a control on the training data says
    in its headline that training on random crops or shifts would hide
    overfitting from the test (the shifts lie inside the augmentation), and
    never reads the error rate as a risk estimate. Where the pipeline used
    moves the model's accuracy out of its interval under its own pipeline
    (:func:`fitaudit.overfit.decision.pipeline_numbers`), a last sentence says so.
    """
    facts = verdict.numbers
    text = inconclusive_words(result, verdict)
    if text is None:
        test = f"p = {pvalue(result.pvalue)} {'<' if result.reject else '>='} {result.delta:g}"
        numbers = test
        plain = getattr(result, "risk_plain", None)
        if plain is not None:
            numbers += f"; error rate {plain:.3f} vs adversarial risk {result.risk_adversarial:.3f}"
        pairwise = getattr(result, "pairwise", result)
        if hasattr(pairwise, "confidence_interval"):
            interval = pairwise.confidence_interval()
            numbers += f", T = R_g - R_S in [{interval.low:.3f}, {interval.high:.3f}]"
        passed = f"Not fitted to this data in a way the shifts reveal ({numbers})"
        power = power_words(facts, int(result.m))
        control = f"p = {pvalue(facts.get('control_pvalue'))}" + (
            f", m = {facts['control_m']}" if facts.get("control_m") is not None else "")
        sentences = {
            "dependent_on_training_data": (
                f"Dependent on its training data, as it should be ({test}): the test has power here.",
                f"The error rate on these examples is optimistic ({numbers})."),
            "no_dependence_on_training_data": (
                f"No dependence detected even on its own training data ({test}): the test has no power here.",
                f"Measured: {numbers}.", power, "Its pass on other data says nothing."),
            "pvalue_below_level": (
                f"Fails: the model is not independent of this data ({test}).",
                f"It was trained or tuned on it, so its error rate here underestimates its true risk ({numbers})."),
            "pvalue_at_or_above_level": (
                f"Passes: no dependence on this data shown ({test}), but training on random crops or shifts would "
                "hide it.",
                f"{passed}, but training on random crops or shifts hides overfitting from this test: a model trained "
                "so can pass it even on its own training data.", power,
                "Only the same test rejecting the model's training data (--train-data or --train-images) shows that "
                "it can see this model's overfitting; without that its error rate here may still be optimistic."),
            "shifts_change_few_answers": (
                f"Inconclusive: not rejected ({test}), but the shifts change too few answers for the test to reject.",
                f"The test could not have rejected here ({numbers}).", power,
                "A model fitted to these examples would not be rejected either, so its error rate here may still be "
                "optimistic."),
            "no_power_at_this_size": (
                f"Inconclusive: not rejected ({test}), but the test has no power at m = {result.m}.",
                f"Measured: {numbers}.", power, "Its error rate here may still be optimistic."),
            "control_rejected": (
                f"Passes: no dependence on this data shown ({test}), and the test rejects the model's training data "
                f"({control}).", f"{passed}, and the test had power.", power),
            "control_not_rejected": (
                f"Inconclusive: the test does not reject even the model's training data ({control}), so its pass "
                "here says nothing.",
                f"Measured here: {numbers}; training on random crops or shifts, for one, hides overfitting from it.",
                power),
        }
        text = said(*sentences.get(verdict.reason, (f"{reason_text(verdict)} {numbers}.",)))
    if facts.get("pipeline_changes_accuracy"):
        text += (f" The pipeline used moves the model's accuracy out of its interval: {facts['pipeline_accuracy']:.3f} "
                 f"under it, against {facts['recorded_accuracy']:.3f} ({facts['recorded_confidence']:.0%} interval "
                 f"{facts['recorded_low']:.3f}-"
                 f"{facts['recorded_high']:.3f}) under the pipeline the model records, so this verdict is on the "
                 "model under a pipeline that changes its answers, not under its own.")
    return text


def power_words(numbers: Mapping[str, Any], m: int) -> str:
    """What the pairwise test could have seen (:mod:`fitaudit.overfit.power`), in one or two sentences."""
    detectable = numbers.get("detectable_T")
    if "power" not in numbers:  # a verdict saved before the power numbers existed
        return ""
    at = f"with {numbers['power']:.0%} power at m = {m}"
    seen = ("no T = R_g - R_S up to its largest is detected " + at if detectable is None
            else f"The test detects T = R_g - R_S >= {detectable:.3f} {at}")
    if "shifted_answers" not in numbers:
        return f"{seen[0].upper()}{seen[1:]}."
    shifted, reachable = numbers["shifted_answers"], numbers["reachable_T"]
    if detectable is not None and reachable >= detectable:
        return (f"{seen}; the shifts turn {shifted:.1%} of the answers from right to wrong, so T could reach "
                f"{reachable:.3f}.")
    return (f"The shifts turn only {shifted:.1%} of the answers from right to wrong, so T could reach at most "
            f"{reachable:.3f}; {seen[0].lower()}{seen[1:]}.")


def say_nmodel(result: Any, verdict: Verdict, **_: Any) -> str:
    """The N-model test over several trained runs of one procedure: a headline with p_N against the level."""
    stopped = inconclusive_words(result, verdict)
    if stopped is not None:
        return stopped
    who = f"the {result.n_models} runs (N-model test)"
    text = f"p_N = {pvalue(result.pvalue)}"
    after = f"Tbar = {result.statistic:.3f}"
    power = power_words(verdict.numbers, int(result.m))
    if verdict.reason == "pvalue_below_level":
        return said(f"Fails: {who} are not independent of this data ({text} < {result.delta:g}).",
                    f"They were trained or tuned on it ({after}), so their error rates here underestimate their true "
                    "risk.")
    if verdict.reason == "pvalue_at_or_above_level":
        return said(f"Passes: no evidence that {who} depend on this data ({text} >= {result.delta:g}).",
                    f"Measured: {after}.", power)
    if verdict.reason == "no_power_at_this_size":
        return said(f"Inconclusive: not rejected ({text} >= {result.delta:g}), but the test has no power at this "
                    "size.", f"Measured: {after}.", power)
    return f"{reason_text(verdict)} {text}, {after}."


def say_ci_test(result: Any, verdict: Verdict, **_: Any) -> str:
    """The confidence-interval test (Test A): disjoint intervals of R_S and R_g reject independence."""
    level = f"{float(result.confidence_level):.4g}"
    if verdict.reason == "intervals_disjoint":
        return said(f"Fails: the intervals of R_S and R_g are disjoint at confidence {level} "
                    f"(p = {pvalue(result.pvalue)}).", "The model is not independent of the sample.")
    if verdict.reason == "intervals_overlap":
        return said(f"Passes: the intervals of R_S and R_g overlap at confidence {level} (p = {pvalue(result.pvalue)}).",
                    "No evidence of dependence from this (weaker) test.")
    return reason_text(verdict)


def say_overfit_command(result: Any, verdict: Verdict, **context: Any) -> str:
    """``fitaudit overfit``: the words of the test it ran (one model, or the N-model test)."""
    return say(result.test, verdict, **context)


# --------------------------------------------------------------------------- PMV


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
    threshold = facts.get("threshold")
    gain = f"{facts.get('baseline_gain') or 0:.0%}"
    baseline = (f"the majority-class learner reaches |k_S| = {result.baseline_statistic:.3f} by always "
                f"predicting the largest class ({facts.get('majority_share', 0):.3f} of the labels)")
    sentences = {
        "slope_undefined": ("Fails: |k_S| is undefined (some fits failed).", f"{numbers}."),
        "at_majority_baseline": (
            f"Fails: the learner underfits: it removes {gain} of the majority-class learner's errors, below "
            f"{facts.get('baseline_gain_needed', 0):.0%}.",
            f"{numbers}: it fits its clean training labels no better than always predicting the largest class, so "
            f"its slope says nothing of a fit: {baseline}."),
        "underfits": (
            f"Fails: the learner underfits: it removes {gain} of the errors of always predicting the largest class, "
            f"below {facts.get('underfit_gain', 0):.0%}.",
            f"{numbers}: it fits its clean training labels little better than always predicting the largest class; "
            "its accuracy falls as labels are flipped because it ignores them, not because its capacity fits the "
            "data (or the labels carry little signal)."),
        "fits_signal": (
            f"Passes: the learner fits the signal rather than the noise (|k_S| = {k:.3f} >= {threshold:g}).",
            f"{numbers}: its training accuracy falls as labels are flipped ({baseline}). A pass rules out memorising "
            "and fitting no more than the class sizes; it does not say this learner is the best one here (on real "
            "tables about a quarter of the passing learners were clearly worse on held-out data than the best "
            "learner of the same table): compare held-out or cross-validated accuracy for that."),
        "fits_part_of_signal": (
            f"Inconclusive: the learner fits only part of its clean training labels (it removes {gain} of the "
            f"majority-class learner's errors, below {facts.get('pass_gain', 0):.0%}).",
            f"{numbers}: its training accuracy falls as labels are flipped, but PMV cannot tell a learner that "
            "underfits from labels that carry little more signal; judge it by its held-out accuracy against other "
            "learners'."),
        "memorises_labels": (
            f"Inconclusive: the learner memorises its training labels (|k_S| = {k:.3f}, below {threshold:g}); PMV "
            "cannot tell whether it generalises.",
            f"{numbers}: it keeps fitting the flipped labels (random forests and boosting memorise and still "
            "generalise): judge it by its held-out accuracy."),
        "partly_memorises_labels": (
            f"Inconclusive: the learner partly memorises its training labels (|k_S| = {k:.3f}, below "
            f"{threshold:g}); PMV cannot tell whether it generalises.",
            f"{numbers}: it follows the flipped labels in part: judge it by its held-out accuracy."),
    }
    if verdict.reason.startswith("memorises_") and "cv_accuracy" in facts:
        return say_pmv_heldout(numbers, threshold, verdict.reason, facts)
    return said(*sentences.get(verdict.reason, (f"{numbers}: {reason_text(verdict)}",)))


def say_pmv_heldout(numbers: str, threshold: Any, reason: str, facts: Mapping[str, Any]) -> str:
    """A memorising learner judged by its cross-validated accuracy (:func:`fitaudit.pmv.decision.heldout_verdict`):
    a headline with the accuracy that decided, then the numbers."""
    folds, rows = facts["cv_folds"], facts["cv_rows"]
    cv, majority = f"{facts['cv_accuracy']:.3f}", f"{facts['cv_majority_accuracy']:.3f}"
    measured = (f"{folds}-fold cross-validated accuracy {cv} on its {rows} training rows, against {majority} for the "
                "majority class")
    gap = ""
    if facts.get("cv_reference"):
        measured += f" and {facts['cv_reference_accuracy']:.3f} for a {facts['cv_reference']}"
        gap = (f"; its gap to the {facts['cv_reference']} lies in [{facts['cv_gap_low']:+.3f}, "
               f"{facts['cv_gap_high']:+.3f}] (95%, reference minus learner)")
    memorises = (f"{numbers}: it keeps fitting the flipped labels (|k_S| below {threshold:g}), so it memorises its "
                 "training labels and PMV cannot tell whether it generalises; judged instead by the accuracy it "
                 f"would take: {measured}{gap}.")
    headlines = {
        "memorises_no_better_than_majority": (
            f"Fails: the learner memorises and is not shown more accurate than the majority class out of fold "
            f"({cv} against {majority}).",
            "Exact McNemar test on the out-of-fold predictions."),
        "memorises_worse_than_reference": (
            f"Fails: the learner memorises noise: it is less accurate out of fold than a {facts.get('cv_reference')} "
            f"({cv} against {facts.get('cv_reference_accuracy', 0):.3f}).",
            f"Exact McNemar test, p = {facts['pvalue_below_reference']:.2g}: it memorises noise a simpler learner "
            "does not."),
        "memorises_cv_cannot_tell": (
            f"Inconclusive: the learner memorises; a loss of {facts['material_gap']:.0%} or more against a "
            f"{facts.get('cv_reference')} is not ruled out (up to {facts['cv_gap_high']:+.3f}).",
            f"These {rows} rows cannot rule it out; more rows would decide."),
        "memorises_but_generalises": (
            f"Passes: the learner memorises but generalises (cross-validated accuracy {cv} against {majority} for the "
            "majority class).",
            "Shown more accurate than the majority class" + (
                f", and less than {facts['material_gap']:.0%} below the {facts['cv_reference']} at most"
                if facts.get("cv_reference") else " (no reference learner: the inputs are not numeric)") + "."),
    }
    headline, ending = headlines.get(reason, (f"{reason.replace('_', ' ').capitalize()}.", ""))
    return said(headline, memorises, ending)


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


# --------------------------------------------------------------------------- adversarial examiner


def say_weakness(report: Any, verdict: Verdict, **_: Any) -> str:
    """Where the failures concentrate: the headline rule (:attr:`fitaudit.examine.weakness.WeaknessReport.headline`),
    its region and lift first, then what the rule's queries show.

    Only a confirmed rule is said to concentrate the failures: its region
    holds at least the minimum of random reference queries and its lift
    interval lies above 1 (the decision: :func:`fitaudit.examine.decision.weakness_verdict`).
    """
    if verdict.reason == "failures_concentrate":
        rule = report.headline
        region, _, shown = str(verdict.numbers["rule"]).partition(": ")
        lift = f" (lift {float(rule['lift']):.1f})" if rule is not None and rule.get("lift") is not None else ""
        return said(f"Failures concentrate where {region}{lift}.", f"There: {shown}." if shown else "")
    if verdict.reason == "no_rule":
        return "No factor range concentrates the failures (no rule)."
    return said(f"No factor range is shown to concentrate the failures (none of {verdict.numbers['rules']} candidate "
                "rules is confirmed).",
                f"A rule is confirmed when at least {verdict.numbers['min_reference_support']} random queries fall in "
                "its region and its lift interval lies above 1.")


def foreign_space_text(result: Any) -> str:
    """A sentence when the examined space is foreign to the model (``result.space_check``), else ``""``.

    :func:`fitaudit.examine.scenarios.space_check` flags a space whose random
    factors cost the model more accuracy than its threshold: the failures
    found there may belong to the space rather than to the model.
    """
    from fitaudit.examine.decision import foreign_factor

    check = getattr(result, "space_check", None)
    if not check or not check.get("foreign"):
        return ""
    text = (f" The failures may belong to the space rather than the model: on {check['reference']}, random factors "
            f"take its accuracy from {fixed(check['clean_accuracy'], 2)} untouched to {fixed(check['random_accuracy'], 2)} "
            f"(a drop above {fixed(check['threshold'], 2)})")
    culprit = foreign_factor(check)
    if culprit is None:
        return text + "; narrow the factors to the variation it must withstand."
    name, unit = culprit["factor"], f" {culprit['unit']}" if culprit["unit"] else ""
    return (text + f". The factor that costs most is {name}: the random queries with {name} more than {culprit['split']:g}{unit} "
            f"from {culprit['default']:g} are right {fixed(culprit['far_accuracy'], 2)} of the time against "
            f"{fixed(culprit['near_accuracy'], 2)} with it nearer ({culprit['n_far']} and {culprit['n_near']} queries), "
            f"the largest drop of any factor; narrow it (--factor {name}=LOW:HIGH) to the variation the model must "
            "withstand.")


def say_examination(result: Any, verdict: Verdict, **_: Any) -> str:
    """The adversarial examiner (Shu et al. 2020): a headline with the worst-case accuracy against the average
    (the decision: :func:`fitaudit.examine.decision.examination_verdict`), then the examiner, the weakness
    rule and the space check."""
    average, worst = verdict.numbers.get("average_accuracy"), verdict.numbers.get("worst_case_accuracy")
    where = ""
    if result.weakness is not None and result.weakness.headline is not None:
        where = " " + say_weakness(result.weakness, result.weakness.verdict())
    where += foreign_space_text(result)
    accuracies = f"worst-case accuracy {fixed(worst, 2)} against {fixed(average, 2)} on random factors"
    examined = (f"Examined by the {result.examiner} examiner (T = {result.steps}, {result.n_model_queries} "
                f"queries).{where}")
    if verdict.reason == "looking_for_strength":
        return (f"Looking for strength, not weakness: best-case true-class probability "
                f"{result.mean_extreme_true_class_probability:.2f} on average "
                f"({result.examiner} examiner, T = {result.steps}).")
    if verdict.reason == "no_query_log":
        return said("The query log is absent, so no worst case can be read.", f"Measured: {accuracies}.", examined)
    if verdict.reason == "worst_case_below_average":
        return said(f"Fails: the average hides weak spots: {accuracies} (tolerance {verdict.numbers['tolerance']:g}).",
                    examined)
    if verdict.reason == "foreign_space":
        return said(f"Inconclusive: {accuracies}, but the worst case is not read as the model's failure: the space is "
                    "foreign to it.", examined)
    if verdict.reason == "worst_case_within_tolerance":
        return said(f"Passes: no weak spot beyond {verdict.numbers['tolerance']:g} accuracy: {accuracies}.", examined)
    return said(f"{reason_text(verdict)} Measured: {accuracies}.", examined)


# --------------------------------------------------------------------------- generalization measures


def _measure_text(row: Mapping[str, Any]) -> str:
    return f"{row['measure']} (score {fixed(row['final_score'], 2)}, Kendall tau {fixed(row['kendall'])})"


def say_leaderboard(board: Any, verdict: Verdict, **_: Any) -> str:
    """Which measures predict the generalization gap (Jiang et al. 2020): a measurement, the first measure and
    its score in the headline.

    The score is the competition's (100 x the official conditional mutual
    information, minimum over pairs of hyperparameters).
    """
    where = f"{len(board.tasks)} task{'s' if len(board.tasks) > 1 else ''}"
    scored = [row for row in board.rows if row["final_score"] is not None]
    if not scored:
        return f"No measure could be scored by the official metric on {where}."
    last = f"Last: {_measure_text(scored[-1])}." if len(scored) > 1 else ""
    return said(f"On {where}, {_measure_text(scored[0])} ranks first by the competition's score of {len(board.rows)} "
                "measures at predicting the generalization gap.", last,
                "Scores are 100 x the official conditional mutual information of the PGDL competition.")


def say_task_scores(scores: Any, verdict: Verdict, **_: Any) -> str:
    """Measures scored on one task (a measurement): the best by the competition's score, its score in the headline."""
    ranked = [s for s in scores.scores if s.official_score is not None]
    if not ranked:
        return f"On {scores.task}, no measure could be scored by the official metric (see the notes)."
    best = max(ranked, key=lambda s: s.official_score)
    return said(f"On {scores.task}, {best.measure} predicts the generalization gap best by the competition's score: "
                f"{100 * best.official_score:.2f}.",
                f"The score is 100 x the official conditional MI, over {scores.n_models} models with hyperparameters "
                f"{', '.join(scores.hparams)}; Kendall tau {fixed(best.kendall)}.")


def say_measure_score(score: Any, verdict: Verdict, **_: Any) -> str:
    """One measure on one task (a measurement): the official score in the headline, the other metrics and its time."""
    if verdict.reason == "not_ranked":
        return said(f"{score.measure} could not be ranked on {score.task}.", f"Why: {score.note}")
    official = None if score.official_score is None else 100 * score.official_score
    return said(f"{score.measure} on {score.task}: official score {fixed(official, 2)} (100 x CMI).",
                f"Kendall tau {fixed(score.kendall)}, Psi {fixed(score.psi)}, general CMI {fixed(score.general_cmi)}; "
                f"{score.total_seconds:.1f} s over {len(score.seconds)} models"
                + (" (over the time budget)." if score.over_budget else "."))


# --------------------------------------------------------------------------- audits


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"


def say_audit(result: Any, verdict: Verdict, **_: Any) -> str:
    """The audit's overall answer (:func:`fitaudit.auditing.decision.audit_verdict`): the problems found."""
    n = verdict.numbers
    if verdict.reason in ("known_answers_found", "known_answers_missed"):
        wrong = n["known"] - n["met"]
        text = f"{n['met']} of {n['known']} known answers found"
        text += "." if not wrong else f"; {_count(wrong, 'wrong answer')}."
        if n["other_failures"]:
            text += f" {_count(n['other_failures'], 'other part')} failed."
        return text
    unsure = n.get("inconclusive", 0)
    aside = f" {_count(unsure, 'check')} inconclusive (assumptions not met on this data)." if unsure else ""
    sentences = {
        "problems_found": f"{_count(n['problems'], 'problem')} found by {n['ran']} checks.{aside}",
        "checks_inconclusive": f"No problem found, but {n['inconclusive']} of the {n['ran']} checks that ran could "
                               "not conclude on these data.",
        "no_problem_found": f"No problem found, and every one of the {n['ran']} checks that ran concluded"
                            + (f" ({_count(n['skipped'], 'other')} could not run with what was given)."
                               if n.get("skipped") else "."),
        "nothing_to_judge": f"No check could pass or fail with what was given.{aside}",
    }
    return sentences.get(verdict.reason) or reason_text(verdict)


# --------------------------------------------------------------------------- the first questions (docs/first-questions.md)


def interval_text(low: float, high: float, level: float) -> str:
    """``"95% interval 0.491-0.553"``."""
    return f"{level:.0%} interval {low:.3f}-{high:.3f}"


def accuracy_text(result: Any) -> str:
    """``"0.522 (522 of 1000; 95% interval 0.491-0.553)"`` of an AccuracyResult."""
    return (f"{result.accuracy:.3f} ({result.correct} of {result.n}; "
            f"{interval_text(result.low, result.high, result.confidence_level)})")


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
    if numbers.get("bound_accuracy") is None:
        return (f"Power: {power}; no scored example is left without a twin, so the room for gain is 1 and the bound "
                f"is the share itself, {_small(numbers['accuracy_bound_high'])}; a pass needs at most a quarter of "
                f"the accuracy interval's half-width ({_small(limit)}).")
    return (f"Power: {power}; a leaked row at most turns a wrong answer right, so such a leak raises the accuracy "
            f"by at most {share:.1%} x the room for gain: {_small(numbers['accuracy_bound'])} at the accuracy "
            f"without the twins ({numbers['bound_accuracy']:.3f}), {_small(numbers['accuracy_bound_high'])} at the "
            f"lower end of its interval ({numbers['bound_accuracy_low']:.3f}; the bound stated); a pass needs at "
            f"most a quarter of the accuracy interval's half-width ({_small(limit)}).")


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


from fitaudit.report.slice_label_words import say_labels, say_slices  # noqa: E402 (the new checks' words)

#: the words of each result type, by type name (a subclass without its own takes its base class's)
WORDS: dict[str, Words] = {
    "OverfitTestResult": say_overfit,
    "PairwiseTestResult": say_overfit,
    "NModelTestResult": say_nmodel,
    "CITestResult": say_ci_test,
    "OverfitCommandResult": say_overfit_command,
    "PMVResult": say_pmv,
    "PMVComparison": say_pmv_comparison,
    "WeaknessReport": say_weakness,
    "ExaminationResult": say_examination,
    "Leaderboard": say_leaderboard,
    "TaskScores": say_task_scores,
    "MeasureScore": say_measure_score,
    "AuditResult": say_audit,
    "AccuracyResult": say_accuracy,
    "LeakageResult": say_leakage,
    "AgreementResult": say_agreement,
    "BaselineResult": say_baseline,
    "CalibrationResult": say_calibration,
    "SliceResult": say_slices,
    "LabelResult": say_labels,
}
