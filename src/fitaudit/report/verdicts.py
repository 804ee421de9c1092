"""The one reading of every result: its status and a sentence with the numbers behind it.

Every place that puts a result into words -- the CLI summaries, the audit's
parts, the HTML report, the demo -- asks :func:`read` here, so they cannot
disagree. A reading is a :class:`Reading` (``status``, ``sentence``); the
status is one of ``pass`` (no problem found), ``fail`` (a problem found),
``info`` (a measurement, not a judgement).

Readers are registered per result type (by class name) with
:func:`reader`; :func:`read` finds the reader of the result's class or of
its nearest registered base class. What a reading depends on besides the
result (the role of the data, a threshold) is passed as keyword ``context``;
the audit keeps that context in its part's ``settings`` (:data:`CONTEXT_KEYS`),
so a report rebuilt from a file re-reads every part (:func:`read_part`) and
never takes a status or a sentence from the file.

Adding the reading of a new result type::

    from fitaudit.report.verdicts import Reading, reader

    @reader("MyResult")
    def read_my_result(result, *, level=0.05, **_):
        if result.pvalue < level:
            return Reading("fail", f"... (p = {pvalue(result.pvalue)} < {level:g}).")
        return Reading("pass", f"... (p = {pvalue(result.pvalue)} >= {level:g}).")

and a case in ``tests/report/test_verdicts.py`` (every registered type must
appear in its agreement test).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

from fitaudit._errors import InputError

#: statuses a reading can give (a part may also be ``skipped``: it has no result to read)
READING_STATUSES = ("pass", "fail", "inconclusive", "info")

#: statuses of an audit part, and how the report labels them
STATUS_LABELS = {"pass": "passed", "fail": "failed", "inconclusive": "inconclusive", "info": "measured",
                 "skipped": "skipped"}

#: the part settings that are a reading's context
CONTEXT_KEYS = ("role", "threshold", "tolerance")

#: default smallest |k_S| counted as a good fit (fitaudit's convention; see :func:`read_pmv`)
GOOD_FIT_SLOPE = 0.3

#: default largest drop from average to worst-case accuracy that passes an examination
EXAMINE_TOLERANCE = 0.2


class Reading(NamedTuple):
    """A result in words: ``status`` (one of :data:`READING_STATUSES`) and ``sentence``."""

    status: str
    sentence: str


_READERS: dict[str, Callable[..., Reading]] = {}


def reader(result_type: str) -> Callable[[Callable[..., Reading]], Callable[..., Reading]]:
    """Decorator: ``function(result, **context) -> Reading`` reads results of ``result_type``."""

    def register(function: Callable[..., Reading]) -> Callable[..., Reading]:
        _READERS[result_type] = function
        return function

    return register


def readable_types() -> list[str]:
    """Result types with a registered reading."""
    return sorted(_READERS)


def read(result: Any, **context: Any) -> Reading:
    """The reading of ``result`` (status and sentence), given the ``context`` its reader takes."""
    for cls in type(result).__mro__:
        function = _READERS.get(cls.__name__)
        if function is not None:
            return function(result, **context)
    raise InputError(f"no reading of {type(result).__name__} (readable: {', '.join(readable_types())}).")


def part_context(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The context a part's reading takes, from its ``settings``."""
    return {key: settings[key] for key in CONTEXT_KEYS if key in settings}


def read_part(part: Any) -> Reading:
    """The reading of an audit part's result (a part without a result keeps its own words)."""
    if part.result is None:
        return Reading(part.status, part.verdict)
    return read(part.result, **part_context(part.settings))


# --------------------------------------------------------------------------- formatting


def pvalue(value: Any) -> str:
    """A p-value: two significant digits, scientific below 0.001."""
    if value is None:
        return "n/a"
    v = float(value)
    if not math.isfinite(v):
        return "n/a"
    return f"{v:.1e}" if v < 1e-3 else f"{v:.2g}"


def fixed(value: Any, digits: int = 3) -> str:
    """A number at ``digits`` decimals, ``n/a`` when absent or not finite."""
    if value is None or (isinstance(value, (float, np.floating)) and not math.isfinite(float(value))):
        return "n/a"
    return f"{float(value):.{digits}f}"


# --------------------------------------------------------------------------- overfitting test


#: what makes the translational test apply, said where (G3) fails
G3_ADVICE = ("The test applies to images whose objects may sit anywhere in the frame: crops of larger scenes "
             "(resize larger than the crop, objects not centred), or objects placed at random positions.")


def g3_sentence(g3: Any) -> str:
    """Why (G3) fails, in one sentence with its numbers."""
    return (f"The objects in these images sit in a preferred place (e.g. centred): a classifier tells the AEG's "
            f"shifted crops from the centre crops {g3.accuracy:.0%} of the time ({g3.statistic} of {g3.n_test} "
            f"held-out crops, at least {g3.low:.0%} at {1 - g3.level:.0%} confidence, p = {pvalue(g3.pvalue)}; "
            f"{g3.threshold:.0%} voids the test), so the "
            "test's assumption G3 fails")


def chance_sentence(chance: Any) -> str:
    """Why a model at chance stops a verdict, naming the likely causes."""
    return (f"The model's accuracy on these {chance.n} examples, {chance.accuracy:.3f}, is at or below chance "
            f"({chance.chance:.3f}, what predictions unrelated to the labels would score), so it was not tested: "
            "the labels are likely not the model's classes in its order (give them with --classes), or the images "
            "are not prepared as the model expects (pipeline, channels), or the labels are wrong")


def read_inconclusive(result: Any, verdict: Any) -> Reading | None:
    """The reading of an inconclusive overfitting verdict (None for the others)."""
    if verdict.reason == "g3_violated":
        return Reading("inconclusive", f"{g3_sentence(result.g3)} and its p-value "
                                       f"(p = {pvalue(result.pvalue)}) means nothing here. {G3_ADVICE}")
    if verdict.reason == "accuracy_at_chance":
        return Reading("inconclusive", f"{chance_sentence(result.chance)}.")
    return None


@reader("OverfitTestResult")
@reader("PairwiseTestResult")
def read_overfit(result: Any, *, role: str = "test", **_: Any) -> Reading:
    """The overfitting test (Werpachowski et al. 2019) of a model on its ``role`` data (``test`` or ``train``).

    On the scored data a rejection fails (the model depends on the data it is
    scored on); on the training data it is a measurement (rejection is
    expected there and shows that the test has power). Where the test's
    assumptions fail (:func:`fitaudit.overfit.decision.overfit_verdict`) it
    is inconclusive.
    """
    from fitaudit.overfit.decision import overfit_verdict

    stopped = read_inconclusive(result, overfit_verdict(result, role=role))
    if stopped is not None:
        return stopped
    sign = "<" if result.reject else ">="
    numbers = f"p = {pvalue(result.pvalue)} {sign} {result.delta:g}"
    plain = getattr(result, "risk_plain", None)
    if plain is not None:
        numbers += f"; error rate {plain:.3f} vs adversarial risk {result.risk_adversarial:.3f}"
    pairwise = getattr(result, "pairwise", result)
    if hasattr(pairwise, "confidence_interval"):
        interval = pairwise.confidence_interval()
        numbers += f", T = R_g - R_S in [{interval.low:.3f}, {interval.high:.3f}]"
    if role == "train":
        if result.reject:
            return Reading("info", f"Dependent on its training data, as it should be ({numbers}): the error rate "
                                   "on these examples is optimistic. The test has power here.")
        return Reading("info", f"No dependence detected even on its own training data ({numbers}): the model "
                               "generalises well here, or the AEG is too weak to show it.")
    if result.reject:
        return Reading("fail", f"The model is not independent of this data ({numbers}): it was trained or "
                               "tuned on it, so its error rate here underestimates its true risk.")
    return Reading("pass", f"No evidence that the model was fitted to this data ({numbers}); "
                           "its error rate here can be read as a risk estimate.")


@reader("NModelTestResult")
def read_nmodel(result: Any, **_: Any) -> Reading:
    """The N-model test over several trained runs of one procedure."""
    from fitaudit.overfit.decision import overfit_verdict

    stopped = read_inconclusive(result, overfit_verdict(result))
    if stopped is not None:
        return stopped
    who = f"the {result.n_models} runs (N-model test)"
    text = f"p_N = {pvalue(result.pvalue)}"
    after = f"Tbar = {result.statistic:.3f}"
    if result.reject:
        return Reading("fail", f"Not independent of this data: {who} were trained or tuned on it ({text} < "
                               f"{result.delta:g}, {after}), so their error rates here underestimate their true risk.")
    return Reading("pass", f"No evidence that {who} depend on this data ({text} >= {result.delta:g}, {after}).")


@reader("CITestResult")
def read_ci_test(result: Any, **_: Any) -> Reading:
    """The confidence-interval test (Test A): disjoint intervals of R_S and R_g reject independence."""
    level = f"{float(result.confidence_level):.4g}"
    if result.reject:
        return Reading("fail", f"The intervals of R_S and R_g are disjoint at confidence {level} "
                               f"(p = {pvalue(result.pvalue)}): the model is not independent of the sample.")
    return Reading("pass", f"The intervals of R_S and R_g overlap at confidence {level} (p = {pvalue(result.pvalue)}): "
                           "no evidence of dependence from this (weaker) test.")


@reader("OverfitCommandResult")
def read_overfit_command(result: Any, **context: Any) -> Reading:
    """``fitaudit overfit``: the reading of the test it ran (one model, or the N-model test)."""
    return read(result.test, **context)


# --------------------------------------------------------------------------- PMV

#: training accuracy on the clean labels below which a learner is read as underfitting, whatever |k_S|
UNDERFIT_ACCURACY = 0.75

#: training accuracy (clean labels and largest noise rate) from which a small |k_S| reads as memorising
MEMORISING_ACCURACY = 0.9


def pmv_bound_text(result: Any) -> str:
    """``"risk bound 0.92 (delta = 0.05)"``, saying when the bound is vacuous (above 1)."""
    bound = float(result.bound)
    vacuous = " (vacuous: above 1, it bounds nothing)" if bound > 1 else ""
    return f"risk bound {bound:.2f} at delta = {result.delta:g}{vacuous}"


@reader("PMVResult")
def read_pmv(result: Any, *, threshold: float = GOOD_FIT_SLOPE, **_: Any) -> Reading:
    """Perturbed model validation (Zhang et al. 2019): |k_S| read together with the clean training accuracy.

    A learner that ignores flipped labels and is right on a fraction a of the
    clean ones has accuracy about (1 - r) a + r (1 - a) on S_r (two classes),
    so |k_S| = 2a - 1: 1 on separable data, about 0.5-0.7 on noisy data such
    as ``make_moons(300, noise=0.3)`` (logistic regression 0.63, RBF SVM
    0.73, a depth-4 tree 0.69); one that memorises every label keeps
    accuracy 1 (|k_S| = 0; an unbounded tree 0.000). ``threshold``
    (default :data:`GOOD_FIT_SLOPE` = 0.3, fitaudit's convention: PMV itself
    ranks learners and draws no line) sits between. A learner that fits
    even its clean training labels poorly (below :data:`UNDERFIT_ACCURACY`)
    underfits whatever its |k_S|: ignoring the flipped labels is then no
    sign of a good fit. The mutation criterion (one noise rate) only ranks
    learners on the same data: it is a measurement.
    """
    mean = np.asarray(result.mean_accuracy, dtype=float)
    first, last = float(mean[0]), float(mean[-1])
    flipped = f"{float(np.asarray(result.rates)[-1]):.0%} flipped"
    if result.criterion != "pmv":
        return Reading("info", f"Mutation score {float(result.score):.3f} (larger = better fit; it ranks learners "
                               f"on the same data): training accuracy {first:.3f} on the clean labels, "
                               f"{last:.3f} with {flipped}.")
    k = float(result.statistic)
    numbers = (f"|k_S| = {k:.3f} with training accuracy {first:.3f} on the clean labels and {last:.3f} with {flipped}, "
               f"{pmv_bound_text(result)}")
    if not math.isfinite(k):
        return Reading("fail", f"{numbers}: |k_S| is undefined (some fits failed).")
    if first < UNDERFIT_ACCURACY:
        return Reading("fail", f"{numbers}: the learner underfits, it fits even its clean training labels poorly "
                               f"(below {UNDERFIT_ACCURACY:g}); its accuracy falls as labels are flipped because it "
                               "ignores them, not because its capacity fits the data (or the labels carry little "
                               "signal).")
    if k >= threshold:
        return Reading("pass", f"{numbers}: its training accuracy falls as labels are flipped, so it fits the signal "
                               f"rather than the noise (|k_S| >= {threshold:g} counts as a good fit).")
    if first >= MEMORISING_ACCURACY and last >= MEMORISING_ACCURACY:
        return Reading("fail", f"{numbers}: it keeps fitting the flipped labels, so it memorises noise, which PMV "
                               f"reads as overfitting (|k_S| below {threshold:g}); a learner that memorises its "
                               "training labels can still generalise (e.g. a random forest): judge it by its "
                               "held-out accuracy too.")
    return Reading("fail", f"{numbers}: it follows the flipped labels in part, so it partly memorises noise "
                           f"(|k_S| below {threshold:g}); such a learner can still generalise (e.g. a random "
                           "forest): judge it by its held-out accuracy too.")


@reader("PMVComparison")
def read_pmv_comparison(comparison: Any, **_: Any) -> Reading:
    """PMV's selection among learners trained on the same perturbed sets (a measurement)."""
    best = comparison.results[comparison.best]
    return Reading("info", f"PMV selects {comparison.best} (largest {best.criterion} score, {best.score:.3f}) among "
                           f"{len(comparison.names)} learners trained on the same perturbed sets.")


# --------------------------------------------------------------------------- adversarial examiner


def examination_accuracies(result: Any) -> tuple[float | None, float | None]:
    """(average accuracy on uniform random factors, worst-case accuracy over the examined instances).

    An instance counts as broken when any examiner query of it was
    misclassified; ``None`` where the query logs are absent.
    """
    queries, reference = result.queries or {}, result.reference_queries or {}
    average = None
    if reference and len(reference.get("label", [])):
        average = 1.0 - float(np.mean(np.asarray(reference["predicted"]) != np.asarray(reference["label"])))
    worst = None
    if queries and len(queries.get("label", [])):
        wrong = np.asarray(queries["predicted"]) != np.asarray(queries["label"])
        broken = np.unique(np.asarray(queries["instance"])[wrong])
        worst = 1.0 - len(broken) / max(len(result.instances), 1)
    return average, worst


@reader("WeaknessReport")
def read_weakness(report: Any, **_: Any) -> Reading:
    """Where the failures concentrate: the headline rule (:attr:`fitaudit.examine.weakness.WeaknessReport.headline`).

    Only a confirmed rule is said to concentrate the failures: its region
    holds at least the minimum of random reference queries and its lift
    interval lies above 1.
    """
    from fitaudit.examine.weakness import MIN_REFERENCE_SUPPORT

    headline = report.headline
    if headline is not None:
        return Reading("info", f"Failures concentrate where {headline['text']}.")
    if not report.rules:
        return Reading("info", "No factor range concentrates the failures (no rule).")
    return Reading("info", f"No factor range is shown to concentrate the failures: none of the {len(report.rules)} "
                           f"candidate rule(s) has at least {MIN_REFERENCE_SUPPORT} random queries in its region "
                           "and a lift interval above 1.")


def foreign_space_text(result: Any) -> str:
    """A sentence when the examined space is foreign to the model (``result.space_check``), else ``""``.

    :func:`fitaudit.examine.scenarios.space_check` flags a space whose random
    factors cost the model more accuracy than its threshold: the failures
    found there may belong to the space rather than to the model.
    """
    check = getattr(result, "space_check", None)
    if not check or not check.get("foreign"):
        return ""
    return (f" The failures may belong to the space rather than the model: on {check['reference']}, random factors "
            f"take its accuracy from {fixed(check['clean_accuracy'], 2)} untouched to {fixed(check['random_accuracy'], 2)} "
            f"(a drop above {fixed(check['threshold'], 2)}); narrow the factors to the variation it must withstand.")


@reader("ExaminationResult")
def read_examination(result: Any, *, tolerance: float = EXAMINE_TOLERANCE, **_: Any) -> Reading:
    """The adversarial examiner (Shu et al. 2020): fail when the worst case is more than ``tolerance`` below average.

    An examination looking for strength (``maximize=False``) is a measurement.
    """
    average, worst = examination_accuracies(result)
    where = ""
    if result.weakness is not None and result.weakness.headline is not None:
        where = " " + read_weakness(result.weakness).sentence
    where += foreign_space_text(result)
    text = (f"worst-case accuracy {fixed(worst, 2)} over the factors against {fixed(average, 2)} on random factors "
            f"({result.examiner} examiner, T = {result.steps}, {result.n_model_queries} queries).")
    if not result.maximize:
        return Reading("info", f"Looking for strength, not weakness: best-case true-class probability "
                               f"{result.mean_extreme_true_class_probability:.2f} on average "
                               f"({result.examiner} examiner, T = {result.steps}).")
    if worst is None:
        return Reading("info", f"The query log is absent, so no worst case can be read: {text}{where}")
    if average is not None and average - worst > tolerance:
        return Reading("fail", f"The average hides weak spots: {text}{where}")
    return Reading("pass", f"No weak spot beyond {tolerance:g} accuracy: {text}{where}")


# --------------------------------------------------------------------------- generalization measures


def _measure_text(row: Mapping[str, Any]) -> str:
    return f"{row['measure']} (score {fixed(row['final_score'], 2)}, Kendall tau {fixed(row['kendall'])})"


@reader("Leaderboard")
def read_leaderboard(board: Any, **_: Any) -> Reading:
    """Which measures predict the generalization gap (Jiang et al. 2020): a measurement.

    The score is the competition's (100 x the official conditional mutual
    information, minimum over pairs of hyperparameters).
    """
    where = f"{len(board.tasks)} task{'s' if len(board.tasks) > 1 else ''}"
    scored = [row for row in board.rows if row["final_score"] is not None]
    if not scored:
        return Reading("info", f"No measure could be scored by the official metric on {where}.")
    last = f"; last: {_measure_text(scored[-1])}" if len(scored) > 1 else ""
    return Reading("info", f"On {where}, {_measure_text(scored[0])} ranks first by the competition's score of "
                           f"{len(board.rows)} measures at predicting the generalization gap{last}. Scores are "
                           "100 x the official conditional mutual information of the PGDL competition.")


@reader("TaskScores")
def read_task_scores(scores: Any, **_: Any) -> Reading:
    """Measures scored on one task (a measurement): the best by the competition's score."""
    ranked = [s for s in scores.scores if s.official_score is not None]
    if not ranked:
        return Reading("info", f"On {scores.task}, no measure could be scored by the official metric (see the notes).")
    best = max(ranked, key=lambda s: s.official_score)
    return Reading("info", f"On {scores.task} ({scores.n_models} models, hyperparameters {', '.join(scores.hparams)}), "
                           f"{best.measure} predicts the generalization gap best by the competition's score: "
                           f"{100 * best.official_score:.2f} (100 x official conditional MI), "
                           f"Kendall tau {fixed(best.kendall)}.")


@reader("MeasureScore")
def read_measure_score(score: Any, **_: Any) -> Reading:
    """One measure on one task (a measurement): the four metrics and its time."""
    if score.official_score is None and score.kendall is None:
        return Reading("info", f"{score.measure} could not be ranked on {score.task}: {score.note}")
    official = None if score.official_score is None else 100 * score.official_score
    text = (f"{score.measure} on {score.task}: official score {fixed(official, 2)} (100 x CMI), "
            f"Kendall tau {fixed(score.kendall)}, Psi {fixed(score.psi)}, general CMI {fixed(score.general_cmi)}; "
            f"{score.total_seconds:.1f} s over {len(score.seconds)} models")
    return Reading("info", text + (" (over the time budget)." if score.over_budget else "."))


# --------------------------------------------------------------------------- audits


def part_label(part: Any) -> tuple[str, str]:
    """(status class, label) of an audit part's badge.

    Where the right answer is known (the demo), a part whose answer is the
    known one is ``found, as expected`` (even when that answer is a failure:
    a model trained on its test set *should* fail the overfitting test) and
    one that missed it is ``WRONG``; otherwise the status's label.
    """
    if part.expected is not None and part.status != "skipped":
        return ("expected", "found, as expected") if part.expected.get("met") else ("wrong", "WRONG answer")
    return part.status, STATUS_LABELS.get(part.status, part.status)


def problems(result: Any) -> list[Any]:
    """The parts that count as problems: failed parts, and parts whose known answer was not found."""
    found = []
    for part in result.parts:
        if part.status == "skipped":
            continue
        kind, _ = part_label(part)
        if kind in ("fail", "wrong"):
            found.append(part)
    return found


@reader("AuditResult")
def read_audit(result: Any, **_: Any) -> Reading:
    """The audit's overall answer: how many problems were found (wrong answers, in the demo)."""
    bad = problems(result)
    known = [p for p in result.parts if p.expected is not None and p.status != "skipped"]
    ran = [p for p in result.parts if p.status != "skipped"]
    if known:
        met = sum(bool(p.expected.get("met")) for p in known)
        wrong = len(known) - met
        text = f"{met} of {len(known)} known answers found"
        text += "." if not wrong else f"; {wrong} wrong answer{'s' if wrong > 1 else ''}."
        others = [p for p in bad if p.expected is None]
        if others:
            text += f" {len(others)} other part{'s' if len(others) > 1 else ''} failed."
        return Reading("fail" if bad else "pass", text)
    unsure = sum(p.status == "inconclusive" for p in ran)
    aside = (f" {unsure} check{'s' if unsure > 1 else ''} inconclusive (assumptions not met on this data)."
             if unsure else "")
    if bad:
        return Reading("fail", f"{len(bad)} problem{'s' if len(bad) > 1 else ''} found by {len(ran)} checks.{aside}")
    if any(p.status == "pass" for p in ran):
        return Reading("pass", f"No problem found by the checks that ran.{aside}")
    return Reading("info", f"No check could pass or fail with what was given.{aside}")


# --------------------------------------------------------------------------- the first questions (docs/first-questions.md)


def interval_text(low: float, high: float, level: float) -> str:
    """``"95% interval 0.491-0.553"``."""
    return f"{level:.0%} interval {low:.3f}-{high:.3f}"


def accuracy_text(result: Any) -> str:
    """``"0.522 (522 of 1000; 95% interval 0.491-0.553)"`` of an AccuracyResult."""
    return (f"{result.accuracy:.3f} ({result.correct} of {result.n}; "
            f"{interval_text(result.low, result.high, result.confidence_level)})")


@reader("AccuracyResult")
def read_accuracy(result: Any, **_: Any) -> Reading:
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
    return Reading("info", text + ".")


def _share(count: int, total: int) -> str:
    return f"{count} of {total} ({count / total:.2%})" if total else f"{count} of {total}"


@reader("LeakageResult")
def read_leakage(result: Any, **_: Any) -> Reading:
    """Did the scored data leak into training: exact and near twins beside the training data's own, and the
    accuracy without them.

    The decision is the result's own (:func:`fitaudit.leakage.decision.leakage_verdict`): the scored
    set's near twins and exact copies against the training rows' own (each against the others), by
    Fisher's exact test; a scored set too small to tell is inconclusive.
    """
    verdict = result.verdict()
    numbers = verdict.numbers
    text = (f"{_share(result.n_near, result.n_scored)} scored examples are within {result.threshold:.4g} of a "
            f"training example ({result.space}), {result.n_exact} of them equal to a training row; of the "
            f"training data's own rows, each against the others, {_share(result.null_near, result.n_calibration)} "
            f"are that close and {_share(result.null_exact, result.n_train)} equal another row")
    if result.accuracy is not None:
        text += f". Accuracy with the near twins {accuracy_text(result.accuracy)}"
        if result.accuracy_without is not None:
            text += f", without them {accuracy_text(result.accuracy_without)}"
        else:
            text += ", none left without them"
    tests = (f"p = {pvalue(numbers['near_pvalue'])} near, {pvalue(numbers['exact_pvalue'])} exact; "
             f"each tested at {numbers['level'] / 2:g}")
    if verdict.reason == "exact_copies_beyond_duplicate_rate":
        return Reading("fail", f"{text}: more scored examples equal a training row than the training data's own "
                               f"repeats explain ({tests}): scored examples were in the training data.")
    if verdict.reason == "near_twins_beyond_null":
        return Reading("fail", f"{text}: more scored examples are that close to a training example than the "
                               f"training data's own rows are ({tests}): the scored data overlaps the training data.")
    if verdict.status == "inconclusive":
        minimum = numbers["minimum_scored"]
        need = ("no scored set could show an excess" if minimum is None
                else f"at least {minimum} scored examples are needed")
        return Reading("inconclusive", f"{text}: too few scored examples to tell: even if all {result.n_scored} "
                                       f"were twins the excess would not reach {numbers['level'] / 2:g}; {need}.")
    return Reading("pass", f"{text}: no more than the training data's own rows ({tests}); no sign of leakage.")


@reader("AgreementResult")
def read_agreement(result: Any, **_: Any) -> Reading:
    """Do independent runs agree: 1 - disagreement beside the measured accuracy (Jiang et al., ICLR 2022).

    Puts :meth:`fitaudit.stats.agreement.AgreementResult.verdict` into
    words: ``fail`` when the measured accuracy is above the agreement
    estimate beyond both intervals (a sign of choosing the model by its
    score on the scored data); ``pass`` only when the check could see a
    selection gain of the relevant size; otherwise the smallest gain it
    could see is stated and the reading is a measurement (``info``: the
    verdict is inconclusive), as it is for runs that nearly never disagree.
    It cannot see training on the scored data itself.
    """
    verdict = result.verdict()
    level = result.confidence_level
    estimate = (f"{result.estimate:.3f} ({result.agree} of {result.n} inputs agree; "
                f"{interval_text(result.low, result.high, level)})")
    if verdict.status == "info":
        return Reading("info", f"Another run of the training agrees with this one on {estimate}: "
                               "its label-free accuracy estimate.")
    gain = verdict.numbers["detectable_gain"]
    power = f"{verdict.numbers['power']:.0%}"
    seen = (f"at n = {result.n} it sees a selection gain of {gain:.3f} or more with {power} probability"
            if gain is not None else f"at n = {result.n} no selection gain can be seen with {power} probability")
    measured = accuracy_text(result.measured)
    if verdict.status == "fail":
        return Reading("fail", f"Measured accuracy {measured} is above the agreement estimate {estimate} beyond both "
                               "intervals: a sign that the model or its settings were chosen by their score on "
                               "this data.")
    if verdict.reason == "runs_nearly_never_disagree":
        return Reading("info", f"Inconclusive: the runs nearly never disagree ({estimate}) while the model errs on "
                               f"{1 - result.measured.accuracy:.3f} of the inputs (measured accuracy {measured}): they "
                               "are too alike (copies, or seeds of a model that barely depends on its seed) for "
                               "their agreement to estimate accuracy, so this check says nothing here.")
    if verdict.status == "inconclusive":
        return Reading("info", f"Inconclusive: measured accuracy {measured} is not above the agreement estimate "
                               f"{estimate} beyond both intervals, but {seen}, above the "
                               f"{verdict.numbers['relevant_gain']:.3f} that matters: a choice by the score on this "
                               "data that gained less would not show (more scored examples would).")
    return Reading("pass", f"Measured accuracy {measured} is not above the agreement estimate {estimate} beyond "
                           f"both intervals, and {seen}: no sign of choosing by the score on this data (training "
                           "on it would not show here).")
