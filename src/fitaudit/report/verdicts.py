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
READING_STATUSES = ("pass", "fail", "info")

#: statuses of an audit part, and how the report labels them
STATUS_LABELS = {"pass": "passed", "fail": "failed", "info": "measured", "skipped": "skipped"}

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


@reader("OverfitTestResult")
def read_overfit(result: Any, *, role: str = "test", **_: Any) -> Reading:
    """The overfitting test (Werpachowski et al. 2019) of a model on its ``role`` data (``test`` or ``train``).

    On the scored data a rejection fails (the model depends on the data it is
    scored on); on the training data it is a measurement (rejection is
    expected there and shows that the test has power).
    """
    interval = result.pairwise.confidence_interval() if hasattr(result, "pairwise") else None
    sign = "<" if result.reject else ">="
    numbers = f"p = {pvalue(result.pvalue)} {sign} {result.delta:g}"
    if hasattr(result, "error_rate"):
        numbers += f"; error rate {result.error_rate:.3f} vs adversarial risk {result.risk_adversarial:.3f}"
    if interval is not None:
        numbers += f", T = R_g - R_S in [{interval.low:.3f}, {interval.high:.3f}]"
    if role == "train":
        if result.reject:
            return Reading("info", f"Dependent on its training data, as it should be ({numbers}): the error rate "
                                   "on these examples is optimistic. The test has power here.")
        return Reading("info", f"No dependence detected even on its own training data ({numbers}): the model "
                               "generalises well here, or the AEG is too weak to show it.")
    if result.reject:
        return Reading("fail", f"Not independent of this data ({numbers}): the model was trained or "
                               "tuned on it, so its error rate here underestimates its true risk.")
    return Reading("pass", f"No evidence that the model was fitted to this data ({numbers}); "
                           "its error rate here can be read as a risk estimate.")


@reader("NModelTestResult")
def read_nmodel(result: Any, **_: Any) -> Reading:
    """The N-model test over several trained runs of one procedure."""
    text = f"p_N = {pvalue(result.pvalue)} over {result.n_models} runs, Tbar = {result.statistic:.3f}"
    if result.reject:
        return Reading("fail", f"The training procedure depends on this data ({text} < {result.delta:g}).")
    return Reading("pass", f"No evidence that the runs were fitted to this data ({text} >= {result.delta:g}).")


# --------------------------------------------------------------------------- PMV


@reader("PMVResult")
def read_pmv(result: Any, *, threshold: float = GOOD_FIT_SLOPE, **_: Any) -> Reading:
    """Perturbed model validation (Zhang et al. 2019): |k_S| against ``threshold``, read with the clean accuracy.

    A learner that ignores flipped labels and is right on a fraction a of the
    clean ones has accuracy about (1 - r) a + r (1 - a) on S_r, so
    |k_S| = 2a - 1: 1 on separable data, about 0.5-0.7 on noisy data such as
    ``make_moons(300, noise=0.3)``; one that memorises every label keeps
    accuracy 1 (|k_S| = 0). ``threshold`` (default 0.3, fitaudit's
    convention: PMV itself ranks learners) sits between.
    """
    k = float(result.score)
    mean = np.asarray(result.mean_accuracy, dtype=float)
    first, last = float(mean[0]), float(mean[-1])
    numbers = (f"|k_S| = {k:.3f}; training accuracy {first:.3f} on the clean labels, "
               f"{last:.3f} with {float(np.asarray(result.rates)[-1]):.0%} flipped")
    if not math.isfinite(k):
        return Reading("fail", f"|k_S| is undefined (some fits failed); {numbers}.")
    if k >= threshold:
        return Reading("pass", f"The learner's capacity fits the data ({numbers}; >= {threshold:g} counts as a good fit).")
    if first >= 0.9 and last >= 0.9:
        return Reading("fail", f"The learner memorises label noise: it overfits ({numbers}; below {threshold:g}).")
    return Reading("fail", f"The learner cannot follow the labels: it underfits or the signal is weak "
                           f"({numbers}; below {threshold:g}).")


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


@reader("ExaminationResult")
def read_examination(result: Any, *, tolerance: float = EXAMINE_TOLERANCE, **_: Any) -> Reading:
    """The adversarial examiner (Shu et al. 2020): fail when the worst case is more than ``tolerance`` below average."""
    average, worst = examination_accuracies(result)
    rules = result.weakness.rules if result.weakness is not None else []
    where = f" Failures concentrate where {rules[0]['text']}." if rules else ""
    text = (f"worst-case accuracy {fixed(worst, 2)} over the factors against {fixed(average, 2)} on random factors "
            f"({result.examiner} examiner, T = {result.steps}, {result.n_model_queries} queries).")
    if average is not None and worst is not None and average - worst > tolerance:
        return Reading("fail", f"The average hides weak spots: {text}{where}")
    if worst is None:
        return Reading("info", f"The query log is absent, so no worst case can be read: {text}{where}")
    return Reading("pass", f"No weak spot beyond {tolerance:g} accuracy: {text}{where}")


# --------------------------------------------------------------------------- generalization measures


@reader("Leaderboard")
def read_leaderboard(board: Any, **_: Any) -> Reading:
    """Which measures predict the generalization gap (Jiang et al. 2020): a measurement."""
    rows = board.rows
    if not rows:
        return Reading("info", "No measure was scored.")

    def score(row: dict[str, Any]) -> str:
        return f"{row['measure']} (score {fixed(row['final_score'], 1)}, Kendall tau {fixed(row['kendall'], 2)})"

    models = len(board.task_scores[0].scores[0].values) if board.task_scores and board.task_scores[0].scores else 0
    return Reading("info", f"Best predictor of the generalization gap over {models} models: {score(rows[0])}; "
                           f"last: {score(rows[-1])}. Scores are 100 x the official conditional mutual "
                           "information of the PGDL competition.")
