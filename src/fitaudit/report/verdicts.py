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

The words of each family of results live in a module of their own
(:mod:`fitaudit.report.overfit_words`, :mod:`~fitaudit.report.pmv_words`,
:mod:`~fitaudit.report.examine_words`, :mod:`~fitaudit.report.pgdl_words`,
:mod:`~fitaudit.report.first_words`, :mod:`~fitaudit.report.table_words`,
:mod:`~fitaudit.report.slice_label_words`, :mod:`~fitaudit.report.audit_words`),
built from :mod:`fitaudit.report.sentences`; this module holds the
reading itself and :data:`WORDS`, the one table from type to words.

Adding the words of a new result type (whose class has ``verdict()``): a
function in the words module of its family, ::

    def say_my_result(result, verdict, **context):
        if verdict.status == "fail":
            return said(f"Fails: ... (p = {pvalue(result.pvalue)} < {verdict.numbers['level']:g}).", "Details ...")
        return said(f"Passes: ... (p = {pvalue(result.pvalue)} >= {verdict.numbers['level']:g}).", "Details ...")

(the first sentence is the headline: the verdict and the one number that
decides it, at most 20 words; :func:`~fitaudit.report.sentences.said`
joins it to the details), its line ``"MyResult": say_my_result`` in
:data:`WORDS` (a plain dict at the end of this module), and a case in ``tests/report/test_verdicts.py`` (every
type in :data:`WORDS` must appear in its agreement test).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

from fitaudit._errors import InputError
from fitaudit.auditing.result import part_context
from fitaudit.report.audit_words import say_audit
from fitaudit.report.examine_words import say_examination, say_weakness
from fitaudit.report.first_words import say_accuracy, say_agreement, say_leakage
from fitaudit.report.overfit_words import say_ci_test, say_nmodel, say_overfit, say_overfit_command
from fitaudit.report.pgdl_words import say_leaderboard, say_measure_score, say_task_scores
from fitaudit.report.pmv_words import say_pmv, say_pmv_comparison
from fitaudit.report.sentences import split_headline
from fitaudit.report.slice_label_words import say_labels, say_slices
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
