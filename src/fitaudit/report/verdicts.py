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
            return f"... (p = {pvalue(result.pvalue)} < {verdict.numbers['level']:g})."
        return f"... (p = {pvalue(result.pvalue)} >= {verdict.numbers['level']:g})."

its line ``"MyResult": say_my_result`` in :data:`WORDS` (a plain dict at the
end of this module), and a case in ``tests/report/test_verdicts.py`` (every
type in :data:`WORDS` must appear in its agreement test).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import types
from collections.abc import Callable, Iterator, Mapping
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

#: statuses of an audit part, and how the report labels them
STATUS_LABELS = {"pass": "passed", "fail": "failed", "inconclusive": "inconclusive", "info": "measured",
                 "skipped": "skipped"}


class Reading(NamedTuple):
    """A result in words: ``status`` (its verdict's, one of :data:`READING_STATUSES`) and ``sentence``."""

    status: str
    sentence: str


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
    """The words of an inconclusive overfitting verdict (None for the others)."""
    if verdict.reason == "g3_violated":
        return f"{g3_sentence(result.g3)} and its p-value (p = {pvalue(result.pvalue)}) means nothing here. {G3_ADVICE}"
    if verdict.reason == "accuracy_at_chance":
        return f"{chance_sentence(result.chance)}."
    if verdict.reason == "accuracy_not_shown_above_chance":
        return f"{not_above_chance_sentence(result.chance)}."
    return None


def reason_text(verdict: Verdict) -> str:
    """A verdict whose reason its type's words do not know, in plain words: ``"inconclusive: g3 violated
    (level = 0.05)"``. Used by the words of every type as their last resort, so a new reason in an
    instrument's decision is never silently worded as another."""
    numbers = ", ".join(f"{k} = {v:.4g}" if isinstance(v, float) else f"{k} = {v}" for k, v in verdict.numbers.items())
    return f"{verdict.status}: {verdict.reason.replace('_', ' ')}" + (f" ({numbers})." if numbers else ".")


def say_overfit(result: Any, verdict: Verdict, **_: Any) -> str:
    """The overfitting test (Werpachowski et al. 2019) of a model on its scored or training data.

    On the scored data a rejection fails (the model depends on the data it is
    scored on); on the training data it is a measurement (rejection is
    expected there and shows that the test has power). Where the test's
    assumptions fail (:func:`fitaudit.overfit.decision.overfit_verdict`) it
    is inconclusive. A pass without a control on the training data says
    first that training on random crops or shifts hides overfitting from
    the test (the shifts lie inside the augmentation), and never reads the
    error rate as a risk estimate. Where the pipeline used moves the model's
    accuracy out of its interval under its own pipeline
    (:func:`fitaudit.overfit.decision.pipeline_numbers`), a last sentence says so.
    """
    facts = verdict.numbers
    text = inconclusive_words(result, verdict)
    if text is None:
        sign = "<" if result.reject else ">="
        numbers = f"p = {pvalue(result.pvalue)} {sign} {result.delta:g}"
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
            "dependent_on_training_data": f"Dependent on its training data, as it should be ({numbers}): the error "
                                          "rate on these examples is optimistic. The test has power here.",
            "no_dependence_on_training_data": f"No dependence detected even on its own training data ({numbers}). "
                                              f"{power} The test has no power for this model: its pass on other "
                                              "data says nothing.",
            "pvalue_below_level": f"The model is not independent of this data ({numbers}): it was trained or tuned "
                                  "on it, so its error rate here underestimates its true risk.",
            "pvalue_at_or_above_level": f"{passed}, but training on random crops or shifts hides overfitting from "
                                        f"this test: a model trained so can pass it even on its own training data. {power} "
                                        "Only the same test rejecting the model's training data (--train-data or "
                                        "--train-images) shows that it can see this model's overfitting; without "
                                        "that its error rate here may still be optimistic.",
            "shifts_change_few_answers": f"Not rejected ({numbers}), but the test could not have rejected here. "
                                         f"{power} A model fitted to these examples would not be rejected either, "
                                         "so its error rate here may still be optimistic.",
            "no_power_at_this_size": f"Not rejected ({numbers}), but the test has no power at this size. {power} "
                                     "Its error rate here may still be optimistic.",
            "control_rejected": f"{passed}, and the test had power: it rejects the data the model was trained on "
                                f"({control}). {power}",
            "control_not_rejected": "The test has no power for this model: it does not reject even the data the "
                                    f"model was trained on ({control}), so its pass here ({numbers}) says nothing "
                                    "(training on random crops or shifts, for one, hides overfitting from it). "
                                    f"{power}",
        }
        text = sentences.get(verdict.reason) or f"{reason_text(verdict)} {numbers}."
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
    """The N-model test over several trained runs of one procedure."""
    stopped = inconclusive_words(result, verdict)
    if stopped is not None:
        return stopped
    who = f"the {result.n_models} runs (N-model test)"
    text = f"p_N = {pvalue(result.pvalue)}"
    after = f"Tbar = {result.statistic:.3f}"
    if verdict.reason == "pvalue_below_level":
        return (f"Not independent of this data: {who} were trained or tuned on it ({text} < {result.delta:g}, "
                f"{after}), so their error rates here underestimate their true risk.")
    if verdict.reason == "pvalue_at_or_above_level":
        return (f"No evidence that {who} depend on this data ({text} >= {result.delta:g}, {after}). "
                f"{power_words(verdict.numbers, int(result.m))}")
    if verdict.reason == "no_power_at_this_size":
        return (f"Not rejected ({text} >= {result.delta:g}, {after}), but the test has no power at this size. "
                f"{power_words(verdict.numbers, int(result.m))}")
    return f"{reason_text(verdict)} {text}, {after}."


def say_ci_test(result: Any, verdict: Verdict, **_: Any) -> str:
    """The confidence-interval test (Test A): disjoint intervals of R_S and R_g reject independence."""
    level = f"{float(result.confidence_level):.4g}"
    if verdict.reason == "intervals_disjoint":
        return (f"The intervals of R_S and R_g are disjoint at confidence {level} (p = {pvalue(result.pvalue)}): "
                "the model is not independent of the sample.")
    if verdict.reason == "intervals_overlap":
        return (f"The intervals of R_S and R_g overlap at confidence {level} (p = {pvalue(result.pvalue)}): "
                "no evidence of dependence from this (weaker) test.")
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
    """Perturbed model validation (Zhang et al. 2019): |k_S| with the clean training accuracy
    (the decision: :func:`fitaudit.pmv.decision.pmv_verdict`)."""
    mean = np.asarray(result.mean_accuracy, dtype=float)
    first, last = float(mean[0]), float(mean[-1])
    flipped = f"{float(np.asarray(result.rates)[-1]):.0%} flipped"
    if verdict.reason == "mutation_score":
        return (f"Mutation score {float(result.score):.3f} (larger = better fit; it ranks learners on the same "
                f"data): training accuracy {first:.3f} on the clean labels, {last:.3f} with {flipped}.")
    k = float(result.statistic)
    numbers = (f"|k_S| = {k:.3f} with training accuracy {first:.3f} on the clean labels and {last:.3f} with {flipped}, "
               f"{pmv_bound_text(result)}")
    threshold = verdict.numbers.get("threshold")
    baseline = (f"the majority-class learner reaches |k_S| = {result.baseline_statistic:.3f} by always "
                f"predicting the largest class ({verdict.numbers.get('majority_share', 0):.3f} of the labels)")
    sentences = {
        "slope_undefined": f"{numbers}: |k_S| is undefined (some fits failed).",
        "at_majority_baseline": f"{numbers}: the learner underfits, it fits its clean training labels no better "
                                f"than always predicting the largest class (it removes "
                                f"{verdict.numbers.get('baseline_gain') or 0:.0%} of that learner's errors, below "
                                f"{verdict.numbers.get('baseline_gain_needed', 0):.0%}), so its slope says nothing "
                                f"of a fit: {baseline}.",
        "underfits": f"{numbers}: the learner underfits, it fits its clean training labels little better than "
                     f"always predicting the largest class (it removes {verdict.numbers.get('baseline_gain') or 0:.0%} "
                     "of the errors of always predicting the largest class, below "
                     f"{verdict.numbers.get('underfit_gain', 0):.0%}); its accuracy falls as labels are flipped "
                     "because it ignores them, not because its capacity fits the data (or the labels carry "
                     "little signal).",
        "fits_signal": f"{numbers}: its training accuracy falls as labels are flipped, so it fits the signal "
                       f"rather than the noise (|k_S| >= {threshold:g} counts as a good fit; {baseline}). A pass "
                       "rules out memorising and fitting no more than the class sizes; it does not say this "
                       "learner is the best one here (on real tables about a quarter of the passing learners were "
                       "clearly worse on held-out data than the best learner of the same table): compare "
                       "held-out or cross-validated accuracy for that.",
        "fits_part_of_signal": f"{numbers}: its training accuracy falls as labels are flipped, but it fits only part "
                               "of its clean training labels (it removes "
                               f"{verdict.numbers.get('baseline_gain') or 0:.0%} of the errors of always predicting "
                               f"the largest class, below {verdict.numbers.get('pass_gain', 0):.0%}): PMV cannot tell "
                               "a learner that underfits from labels that carry little more signal; judge it by its "
                               "held-out accuracy against other learners'.",
        "memorises_labels": f"{numbers}: it keeps fitting the flipped labels, so it memorises its training "
                            f"labels (|k_S| below {threshold:g}); PMV cannot tell whether it generalises "
                            "(random forests and boosting memorise and still do): judge it by its held-out "
                            "accuracy.",
        "partly_memorises_labels": f"{numbers}: it follows the flipped labels in part, so it partly memorises its "
                                   f"training labels (|k_S| below {threshold:g}); PMV cannot tell whether it "
                                   "generalises: judge it by its held-out accuracy.",
    }
    if verdict.reason.startswith("memorises_") and "cv_accuracy" in verdict.numbers:
        return say_pmv_heldout(numbers, threshold, verdict.reason, verdict.numbers)
    return sentences.get(verdict.reason) or f"{numbers}: {reason_text(verdict)}"


def say_pmv_heldout(numbers: str, threshold: Any, reason: str, facts: Mapping[str, Any]) -> str:
    """A memorising learner judged by its cross-validated accuracy (:func:`fitaudit.pmv.decision.heldout_verdict`)."""
    folds, rows = facts["cv_folds"], facts["cv_rows"]
    measured = (f"{folds}-fold cross-validated accuracy {facts['cv_accuracy']:.3f} on its {rows} training rows, "
                f"against {facts['cv_majority_accuracy']:.3f} for the majority class")
    gap = ""
    if facts.get("cv_reference"):
        measured += f" and {facts['cv_reference_accuracy']:.3f} for a {facts['cv_reference']}"
        gap = (f"; its gap to the {facts['cv_reference']} lies in [{facts['cv_gap_low']:+.3f}, "
               f"{facts['cv_gap_high']:+.3f}] (95%, reference minus learner)")
    memorises = (f"{numbers}: it keeps fitting the flipped labels (|k_S| below {threshold:g}), so it memorises its "
                 "training labels and PMV cannot tell whether it generalises; judged instead by the accuracy it "
                 f"would take: {measured}{gap}.")
    endings = {
        "memorises_no_better_than_majority": " It is not shown more accurate than always predicting the largest "
                                             "class (exact McNemar test on the out-of-fold predictions).",
        "memorises_worse_than_reference": f" It is less accurate than the {facts.get('cv_reference')} "
                                          f"(exact McNemar test, p = {facts['pvalue_below_reference']:.2g}): it "
                                          "memorises noise a simpler learner does not.",
        "memorises_cv_cannot_tell": f" These rows cannot rule out a loss of {facts['material_gap']:.0%} or more "
                                    "against the simpler learner; more rows would decide.",
        "memorises_but_generalises": " It generalises although it memorises: shown more accurate than the majority "
                                     "class" + (f", and less than {facts['material_gap']:.0%} below the "
                                                f"{facts['cv_reference']} at most" if facts.get("cv_reference")
                                                else " (no reference learner: the inputs are not numeric)") + ".",
    }
    return memorises + endings.get(reason, "")


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
    """Where the failures concentrate: the headline rule (:attr:`fitaudit.examine.weakness.WeaknessReport.headline`).

    Only a confirmed rule is said to concentrate the failures: its region
    holds at least the minimum of random reference queries and its lift
    interval lies above 1 (the decision: :func:`fitaudit.examine.decision.weakness_verdict`).
    """
    if verdict.reason == "failures_concentrate":
        return f"Failures concentrate where {verdict.numbers['rule']}."
    if verdict.reason == "no_rule":
        return "No factor range concentrates the failures (no rule)."
    return (f"No factor range is shown to concentrate the failures: none of the {verdict.numbers['rules']} "
            f"candidate rule(s) has at least {verdict.numbers['min_reference_support']} random queries in its region "
            "and a lift interval above 1.")


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
    """The adversarial examiner (Shu et al. 2020): worst case against average
    (the decision: :func:`fitaudit.examine.decision.examination_verdict`)."""
    average, worst = verdict.numbers.get("average_accuracy"), verdict.numbers.get("worst_case_accuracy")
    where = ""
    if result.weakness is not None and result.weakness.headline is not None:
        where = " " + say_weakness(result.weakness, result.weakness.verdict())
    where += foreign_space_text(result)
    text = (f"worst-case accuracy {fixed(worst, 2)} over the factors against {fixed(average, 2)} on random factors "
            f"({result.examiner} examiner, T = {result.steps}, {result.n_model_queries} queries).")
    if verdict.reason == "looking_for_strength":
        return (f"Looking for strength, not weakness: best-case true-class probability "
                f"{result.mean_extreme_true_class_probability:.2f} on average "
                f"({result.examiner} examiner, T = {result.steps}).")
    if verdict.reason == "no_query_log":
        return f"The query log is absent, so no worst case can be read: {text}{where}"
    if verdict.reason == "worst_case_below_average":
        return f"The average hides weak spots: {text}{where}"
    if verdict.reason == "foreign_space":
        return f"The worst case is not read as the model's failure: {text}{where}"
    if verdict.reason == "worst_case_within_tolerance":
        return f"No weak spot beyond {verdict.numbers['tolerance']:g} accuracy: {text}{where}"
    return f"{reason_text(verdict)} {text}{where}"


# --------------------------------------------------------------------------- generalization measures


def _measure_text(row: Mapping[str, Any]) -> str:
    return f"{row['measure']} (score {fixed(row['final_score'], 2)}, Kendall tau {fixed(row['kendall'])})"


def say_leaderboard(board: Any, verdict: Verdict, **_: Any) -> str:
    """Which measures predict the generalization gap (Jiang et al. 2020): a measurement.

    The score is the competition's (100 x the official conditional mutual
    information, minimum over pairs of hyperparameters).
    """
    where = f"{len(board.tasks)} task{'s' if len(board.tasks) > 1 else ''}"
    scored = [row for row in board.rows if row["final_score"] is not None]
    if not scored:
        return f"No measure could be scored by the official metric on {where}."
    last = f"; last: {_measure_text(scored[-1])}" if len(scored) > 1 else ""
    return (f"On {where}, {_measure_text(scored[0])} ranks first by the competition's score of {len(board.rows)} "
            f"measures at predicting the generalization gap{last}. Scores are 100 x the official conditional "
            "mutual information of the PGDL competition.")


def say_task_scores(scores: Any, verdict: Verdict, **_: Any) -> str:
    """Measures scored on one task (a measurement): the best by the competition's score."""
    ranked = [s for s in scores.scores if s.official_score is not None]
    if not ranked:
        return f"On {scores.task}, no measure could be scored by the official metric (see the notes)."
    best = max(ranked, key=lambda s: s.official_score)
    return (f"On {scores.task} ({scores.n_models} models, hyperparameters {', '.join(scores.hparams)}), "
            f"{best.measure} predicts the generalization gap best by the competition's score: "
            f"{100 * best.official_score:.2f} (100 x official conditional MI), Kendall tau {fixed(best.kendall)}.")


def say_measure_score(score: Any, verdict: Verdict, **_: Any) -> str:
    """One measure on one task (a measurement): the four metrics and its time."""
    if verdict.reason == "not_ranked":
        return f"{score.measure} could not be ranked on {score.task}: {score.note}"
    official = None if score.official_score is None else 100 * score.official_score
    text = (f"{score.measure} on {score.task}: official score {fixed(official, 2)} (100 x CMI), "
            f"Kendall tau {fixed(score.kendall)}, Psi {fixed(score.psi)}, general CMI {fixed(score.general_cmi)}; "
            f"{score.total_seconds:.1f} s over {len(score.seconds)} models")
    return text + (" (over the time budget)." if score.over_budget else ".")


# --------------------------------------------------------------------------- audits


#: the known answers of the audit being drawn (:func:`known_answers`): part id -> {"text", "met"}
_KNOWN: contextvars.ContextVar[Mapping[str, Mapping[str, Any]]] = contextvars.ContextVar(
    "known_answers", default=types.MappingProxyType({}))


@contextlib.contextmanager
def known_answers(result: Any) -> Iterator[Mapping[str, Mapping[str, Any]]]:
    """While drawing ``result``: its known answers (``result.known_answers()``, the demo's hook) for :func:`part_label`."""
    token = _KNOWN.set(result.known_answers())
    try:
        yield _KNOWN.get()
    finally:
        _KNOWN.reset(token)


def known_answer(part: Any) -> Mapping[str, Any] | None:
    """The known answer of ``part`` in the audit being drawn (``None`` outside the demo, or for a skipped part)."""
    return None if part.status == "skipped" else _KNOWN.get().get(part.id)


def part_label(part: Any, answer: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """(status class, label) of an audit part's badge.

    Where the right answer is known (``answer``, by default the part's in
    the audit being drawn: :func:`known_answers`), a part whose answer is
    the known one is ``found, as expected`` (even when that answer is a
    failure: a model trained on its test set *should* fail the overfitting
    test) and one that missed it is ``WRONG``; otherwise the status's label.
    """
    answer = answer if answer is not None else known_answer(part)
    if answer is not None and part.status != "skipped":
        return ("expected", "found, as expected") if answer.get("met") else ("wrong", "WRONG answer")
    return part.status, STATUS_LABELS.get(part.status, part.status)


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
    """How precise the measured accuracy is: k/n with its exact interval, and the weakest class."""
    text = f"Accuracy on the {result.n} scored examples: {accuracy_text(result)}, exact (Clopper-Pearson)"
    scored = [c for c in range(len(result.class_total)) if result.class_total[c] > 0]
    if len(scored) > 1:
        worst = min(scored, key=lambda c: result.class_correct[c] / result.class_total[c])
        text += (f"; weakest class {result.class_name(worst)!r}: "
                 f"{result.class_correct[worst] / result.class_total[worst]:.3f} "
                 f"({result.class_correct[worst]} of {result.class_total[worst]}; "
                 f"{interval_text(result.class_low[worst], result.class_high[worst], result.confidence_level)})")
    empty = result.empty_classes()
    if empty:
        text += f"; no scored example of class(es) {', '.join(repr(result.class_name(c)) for c in empty)}"
    return text + "."


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
            f"the accuracy by at most {allowed:.1%} x the room for gain: {_small(numbers['accuracy_bound'])} at the accuracy "
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
    return f"without predictions, an undetected leak could raise the accuracy by {most} the leaked share itself, {high:.1%}"


def _headline(result: Any, verdict: Verdict) -> str | None:
    """The verdict, the count and the bound on the accuracy in one short sentence (``None``: a reason not known here)."""
    numbers, twins = verdict.numbers, _twins(result)
    explained = "no more than the training data's own repeats explain"
    reason = verdict.reason
    if reason == "exact_copies_beyond_duplicate_rate":
        return (f"Leakage: {twins}, {numbers['n_beyond_repeats']} more than the training data's own repeats explain: "
                "scored examples were in the training data.")
    if reason == "near_twins_beyond_null":
        return (f"Leakage: {twins}, {numbers['n_beyond_repeats']} more than the training data's own rows have: the "
                "scored data overlaps the training data.")
    if reason == "exact_copies_unexplained":
        return (f"Inconclusive: {result.n_exact} scored example(s) equal a training example although no training "
                "example equals another, copies the data's own repeats do not explain, too few for the test to call "
                "an excess; find where they came from (pairs below).")
    if reason == "rows_mostly_repeat":
        return (f"Inconclusive: {_share(result.null_exact, result.n_train)} training rows equal another, so a copy "
                f"cannot be told from a natural repeat; {twins}.")
    if reason == "twins_change_accuracy":
        return (f"Inconclusive: {twins}, {explained}, but removing them moves the accuracy out of its interval: the "
                "score rests on rows at or near training rows.")
    if reason == "too_few_scored":
        minimum = numbers["minimum_scored"]
        need = ("no scored set could show an excess" if minimum is None
                else f"at least {minimum} scored examples are needed")
        return (f"Inconclusive: too few scored examples to tell: even if all {result.n_scored} were twins the excess "
                f"would not reach {numbers['level'] / 2:g}; {need}.")
    if reason == "low_power":
        if numbers["accuracy_bound_high"] is None:
            return f"Inconclusive: {twins}, {explained}, but the check could not see even a fully leaked scored set."
        allowed = numbers["bound_limit"]
        allowed_text = _small(allowed) if allowed is not None else f"{numbers['max_undetected_share']:.0%}"
        return f"Inconclusive: {twins}, {explained}, but {_undetected(numbers)}, more than a pass allows ({allowed_text})."
    if reason == "no_excess_twins":
        return f"No sign of leakage: {twins}, {explained}; {_undetected(numbers)}."
    return None


def say_leakage(result: Any, verdict: Verdict, **_: Any) -> str:
    """Did the scored data leak into training: a headline (the verdict, the count of twins, the most an undetected
    leak could raise the accuracy), then the details: the twins beside the training data's own, the pairs beyond
    them, the accuracy with and without the twins, and the bound with the rule it meets.

    The decision is the result's own (:func:`fitaudit.leakage.decision.leakage_verdict`): the scored set's near
    twins and exact copies against the training rows' own (each against the others), by Fisher's exact test;
    without an excess, ``pass`` needs the bound on the accuracy (:func:`fitaudit.leakage.power.accuracy_bound`)
    small against the accuracy's interval (without predictions: the detectable share at most
    ``max_undetected_share``), and copies the data's own repeats cannot explain, rows that mostly repeat or an
    accuracy that moves without the twins are inconclusive.
    """
    numbers = verdict.numbers
    headline = _headline(result, verdict)
    if headline is None:
        return f"{_twins(result)}: {reason_text(verdict)}"
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
    return headline + details + _left_out(result)


def say_agreement(result: Any, verdict: Verdict, **_: Any) -> str:
    """Do independent runs agree: 1 - disagreement beside the measured accuracy (Jiang et al., ICLR 2022).

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
        return f"Another run of the training agrees with this one on {estimate}: its label-free accuracy estimate."
    gain = verdict.numbers.get("detectable_gain")
    power = f"{verdict.numbers.get('power', 0.0):.0%}"
    seen = (f"at n = {result.n} it sees a selection gain of {gain:.3f} or more with {power} probability"
            if gain is not None else f"at n = {result.n} no selection gain can be seen with {power} probability")
    measured = accuracy_text(result.measured)
    sentences = {
        "measured_above_estimate": f"Measured accuracy {measured} is above the agreement estimate {estimate} beyond "
                                   "both intervals: a sign that the model or its settings were chosen by their "
                                   "score on this data.",
        "runs_nearly_never_disagree": f"Inconclusive: the runs nearly never disagree ({estimate}) while the model errs "
                                      f"on {1 - result.measured.accuracy:.3f} of the inputs (measured accuracy "
                                      f"{measured}): they are too alike (copies, or seeds of a model that barely "
                                      "depends on its seed) for their agreement to estimate accuracy, so this check "
                                      "says nothing here.",
        "gain_below_detection": f"Inconclusive: measured accuracy {measured} is not above the agreement estimate "
                                f"{estimate} beyond both intervals, but {seen}, above the "
                                f"{verdict.numbers.get('relevant_gain', 0.0):.3f} that matters: a choice by the score "
                                "on this data that gained less would not show (more scored examples would).",
        "no_selection_seen": f"Measured accuracy {measured} is not above the agreement estimate {estimate} beyond "
                             f"both intervals, and {seen}: no sign of choosing by the score on this data (training "
                             "on it would not show here).",
    }
    return sentences.get(verdict.reason) or f"Measured accuracy {measured} beside the agreement estimate {estimate}: " \
                                             f"{reason_text(verdict)}"


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
