"""The words of the overfitting test (Werpachowski et al. 2019): one model, the N-model test, Test A, the command.

Each function puts the result's own verdict (:mod:`fitaudit.overfit.decision`)
into words: a headline with the verdict and its p-value against the level,
then the error rate, adversarial risk, power, and the checks of the test's
assumptions (G3, accuracy above chance). Registered in
:data:`fitaudit.report.verdicts.WORDS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fitaudit.models.labels import CHANCE_CONFIDENCE
from fitaudit.report.numbers import pvalue
from fitaudit.report.sentences import reason_text, said
from fitaudit.verdict import Verdict

#: what makes the translational test apply, said where (G3) fails
G3_ADVICE = ("The test applies to images whose objects may sit anywhere in the frame: crops of larger scenes "
             "(resize larger than the crop, objects not centred), or objects placed at random positions.")


def g3_sentence(g3: Any) -> str:
    """Why (G3) fails, in one sentence with its numbers: the check's test rejects it at its level."""
    return (f"The objects in these images sit in a preferred place (e.g. centred): a classifier tells the AEG's "
            f"{_moved(g3)} crops from the centre crops {g3.accuracy:.1%} of the time ({g3.statistic} of {g3.n_test} "
            f"held-out crops, at least {g3.low:.1%} at {1 - g3.level:.0%} confidence, above the 50% of chance: "
            f"p = {pvalue(g3.pvalue)} < {g3.level:g}), so the test's assumption G3 fails")




def _moved(g3: Any) -> str:
    """What the (G3) check told from the centre crops: the AEG's shifts, and their mirror images where it has them."""
    return "shifted or mirrored" if getattr(g3, "mirror", False) else "shifted"


def g3_line(g3: Any, guide: str) -> str:
    """The (G3) check in one line (or that it was not made), pointing to ``guide`` for how to read it."""
    from fitaudit.overfit.decision import g3_rejects

    if g3 is None:
        return f"Valid only if shifting an image keeps its density (G3), which was not checked; see {guide}."
    outcome = "fails" if g3_rejects(g3) else "holds (no sign against it)"
    return (f"G3 check ({g3.n_images} images): a classifier tells {_moved(g3)} from centre crops {g3.accuracy:.1%} of "
            f"the time ({g3.statistic} of {g3.n_test}, at least {g3.low:.1%} at {1 - g3.level:.0%} confidence, "
            f"p = {pvalue(g3.pvalue)}; G3 fails when p < {g3.level:g}, that is when the bound lies above the 50% "
            f"of chance): G3 {outcome}; see {guide}.")




def aeg_sentence(moves: Mapping[str, Any] | None) -> str:
    """Which translational AEG the verdict rests on, where it is not the paper's plain ``V_eps``: shifts by
    multiples of ``stride`` pixels (beyond a random-crop augmentation) and/or their mirror images
    (:class:`~fitaudit.overfit.mirror.MirrorTranslationAEG`); "" for the plain AEG and for results without
    ``moves``."""
    if not moves:
        return ""
    stride, eps, mirror = int(moves.get("stride", 1)), int(moves["eps"]), bool(moves.get("mirror", False))
    if stride == 1 and not mirror:
        return ""
    shifts = (f"by multiples of {stride} px, up to {eps * stride} px per axis" if stride > 1
              else f"by up to {eps} px per axis")
    return f"The AEG shifted the crops {shifts}" + (", and also tried their mirror images." if mirror else ".")


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
    text = said(text, aeg_sentence(getattr(result, "moves", None)))
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
    """The N-model test over several trained runs of one procedure: a headline with p_N against the level,
    then which AEG it used where that is not the plain one (:func:`aeg_sentence`)."""
    return said(_nmodel_words(result, verdict), aeg_sentence(getattr(result, "moves", None)))


def _nmodel_words(result: Any, verdict: Verdict) -> str:
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
    if verdict.reason == "pvalue_at_or_above_level":  # no control: say first what hides from the test
        return said(f"Passes: no dependence of the {result.n_models} runs on this data shown ({text} >= "
                    f"{result.delta:g}), but random-crop training would hide it.",
                    f"Measured with the N-model test: {after}; training on random crops or shifts hides overfitting "
                    "from this test: runs trained so can pass it even on their own training data.", power,
                    "Only the same test rejecting the runs' training data (--train-data or --train-images) shows "
                    "that it can see their overfitting; without that their error rates here may still be "
                    "optimistic.")
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
    """``fitaudit overfit``: the words of the test it ran (the N-model test, or the test of one model)."""
    words = say_nmodel if type(result.test).__name__ == "NModelTestResult" else say_overfit
    return words(result.test, verdict, **context)
