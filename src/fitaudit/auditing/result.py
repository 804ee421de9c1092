"""The audit's results as pure data: :class:`AuditPart` and :class:`AuditResult`.

Nothing here draws, writes files or words a verdict: a part carries the
status and sentence that :mod:`fitaudit.report.verdicts` gave it, and
:mod:`fitaudit.report` turns a result into pages (``fitaudit.report.save_audit``,
``fitaudit.report.audit_page``). ``AuditResult._repr_html_`` (the notebook
view) asks the report layer for the page on demand.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from fitaudit._errors import InputError
from fitaudit.auditing.decision import audit_verdict
from fitaudit.results import Result
from fitaudit.verdict import STATUSES as VERDICT_STATUSES
from fitaudit.verdict import Verdict

#: the four instruments, in report order
INSTRUMENTS = ("overfit", "examine", "pgdl", "pmv")

#: statuses of a part (:data:`fitaudit.verdict.STATUSES`): ``pass`` (no problem found), ``fail`` (a problem
#: found), ``inconclusive`` (the check's assumptions fail on these data), ``info`` (a measurement, not a
#: judgement), ``skipped`` (could not run)
STATUSES = VERDICT_STATUSES


@dataclasses.dataclass(repr=False)
class AuditPart(Result):
    """One answered (or skipped) question of an audit.

    Attributes
    ----------
    id : str
        Stable name, e.g. ``"overfit-test"``; ``--fail-on`` accepts it.
    instrument : str
        One of :data:`INSTRUMENTS`, or ``"first"`` for the first questions (:mod:`fitaudit.auditing.first`).
    title : str
        What was asked, in words.
    status : str
        One of :data:`STATUSES`; for a part with a result, the status
        :func:`fitaudit.report.verdicts.read` gives that result.
    verdict : str
        The answer in plain words with the numbers behind it (for a skipped
        part: why it was skipped).
    numbers : dict
        The headline numbers (name -> value), shown in the summary.
    result : Result or None
        The instrument's full result (the evidence).
    settings : dict
        Parameters of this part (levels, sizes, seeds); also what the
        reading needs besides the result (``role``, ``threshold``,
        ``tolerance``).
    expected : dict or None
        Where the right answer is known in advance (the demo):
        ``{"text": ..., "met": bool}``.
    images : list of dict
        The evidence as pictures (e.g. the examiner's worst cases):
        ``{"label": class name, "p_true": float, "factors": {name: value},
        "pixels": uint8 array (C, H, W)}``; drawn by the report.
    evidence : list of Result
        Further results behind the answer, drawn by the report through their
        ``"figure"`` renderers (e.g. the t-SNE embedding of the examiner's
        queries, :class:`~fitaudit.examine.QueryEmbedding`).
    seconds : float
        Wall time of the computation (of the run that computed it).
    resumed : bool
        Whether this run reused the part from the output folder.
    key : str or None
        Its checkpoint key.
    """

    id: str
    instrument: str
    title: str
    status: str
    verdict: str
    numbers: dict[str, Any] = dataclasses.field(default_factory=dict)
    result: Result | None = None
    settings: dict[str, Any] = dataclasses.field(default_factory=dict)
    expected: dict[str, Any] | None = None
    images: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    evidence: list[Result] = dataclasses.field(default_factory=list)
    seconds: float = 0.0
    resumed: bool = False
    key: str | None = None

    def _summary_fields(self) -> list[str]:
        return ["id", "status", "verdict"]


@dataclasses.dataclass(repr=False)
class AuditResult(Result):
    """Outcome of :func:`fitaudit.audit` (and of ``fitaudit demo``): every part and its context.

    Attributes
    ----------
    title : str
    subject : dict
        What was audited (model, data shapes and accuracies).
    parts : list of AuditPart
        In report order; skipped parts included.
    settings : dict
        The audit's parameters.
    environment : dict
        Versions of Python, fitaudit and the libraries, the platform.
    random_state : int or None
    seconds : float
        Wall time of this run (resumed parts count their own original time separately).
    created : str
        UTC time the result was made (ISO 8601).
    """

    title: str
    subject: dict[str, Any]
    parts: list[AuditPart]
    settings: dict[str, Any]
    environment: dict[str, Any]
    random_state: int | None
    seconds: float
    created: str

    def _summary_fields(self) -> list[str]:
        return ["title", "seconds"]

    def part(self, part_id: str) -> AuditPart:
        """The part named ``part_id`` (``KeyError`` if absent)."""
        for part in self.parts:
            if part.id == part_id:
                return part
        raise KeyError(part_id)

    def verdict(self, **context: Any) -> Verdict:
        """The audit's overall decision (:func:`fitaudit.auditing.decision.audit_verdict`)."""
        return audit_verdict(self, **context)

    def verdicts(self) -> dict[str, str]:
        """Status of every part, by id."""
        return {part.id: part.status for part in self.parts}

    def reused(self) -> list[AuditPart]:
        """The parts this run took from the output folder instead of computing them."""
        return [part for part in self.parts if part.resumed]

    def failing(self, names: Sequence[str]) -> list[str]:
        """Messages for each of ``names`` (instruments or part ids) that failed or did not run.

        Used by ``fitaudit audit --fail-on``: a chosen verdict fails when any
        of its parts has status ``fail``, and also when none of them ran
        (a check that could not be made is not a pass).
        """
        messages = []
        for name in names:
            chosen = [p for p in self.parts if name in (p.id, p.instrument)]
            if not chosen:
                known = sorted({p.id for p in self.parts} | set(INSTRUMENTS))
                raise InputError(f"`fail_on` names {name!r}, which is not an instrument or part; use {', '.join(known)}.")
            for part in chosen:
                if part.status == "fail":
                    messages.append(f"{part.id} failed: {part.verdict}")
            if all(p.status == "skipped" for p in chosen):
                messages.append(f"{name} did not run: " + "; ".join(p.verdict for p in chosen))
        return messages

    def __repr__(self) -> str:
        from fitaudit.report.verdicts import part_label, read

        marks = {"pass": "ok  ", "fail": "FAIL", "inconclusive": "????", "info": "info", "skipped": "skip",
                 "expected": "found",
                 "wrong": "WRONG"}
        reused = len(self.reused())
        ran = sum(part.key is not None for part in self.parts)  # skipped parts have no key
        timing = f"{self.seconds:.0f} s" + (f"; {reused} of {ran} parts reused from the output folder" if reused else "")
        lines = [f"{self.title} ({timing}): {read(self).sentence}"]
        for part in self.parts:
            kind, _ = part_label(part)
            lines.append(f"  [{marks.get(kind, kind)}] {part.title}: {part.verdict}")
            if part.expected is not None:
                lines.append(f"          known answer: {part.expected['text']} "
                             f"({'found' if part.expected['met'] else 'NOT found'})")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """The notebook view: the report page in a frame (drawn by :mod:`fitaudit.report`)."""
        from fitaudit.report import render

        return str(render(self, "html", standalone=False))


def register_result_types() -> None:
    """Import the result types a part can hold, so that saved parts and audits load back.

    The audit is the one place that combines the instruments; loading one of
    its files needs every instrument's result type registered
    (:data:`fitaudit.results.RESULT_TYPES`).
    """
    from fitaudit.examine import ExaminationResult, QueryEmbedding
    from fitaudit.leakage import LeakageResult
    from fitaudit.overfit import NModelTestResult, OverfitTestResult
    from fitaudit.pgdl import Leaderboard
    from fitaudit.pmv import PMVResult
    from fitaudit.stats import AccuracyResult, AgreementResult

    del ExaminationResult, QueryEmbedding, NModelTestResult, OverfitTestResult, Leaderboard, PMVResult
    del LeakageResult, AccuracyResult, AgreementResult


def reread(part: AuditPart, *, name: str = "part", path: str = "") -> AuditPart:
    """``part`` with its status and verdict read again from its result (never trusted from a file).

    ``name`` and ``path`` (e.g. ``"parts[3]."``) are how an error names the field.
    """
    from fitaudit.report.verdicts import read_part

    if part.status not in STATUSES:
        raise InputError(f"`{name}`: field `{path}status` must be one of {', '.join(STATUSES)}; got {part.status!r}.")
    expected = part.expected
    if expected is not None and not (isinstance(expected.get("text"), str) and isinstance(expected.get("met"), bool)):
        raise InputError(f"`{name}`: field `{path}expected` must hold 'text' (text) and 'met' (true or false); "
                         f"got {expected!r}.")
    if part.result is not None:
        if part.status == "skipped":
            raise InputError(f"`{name}`: field `{path}status` is 'skipped', but the part holds a result.")
        part.status, part.verdict = read_part(part)
    return part


def load_part(data: dict[str, Any], *, name: str = "part") -> AuditPart:
    """An :class:`AuditPart` from its ``to_dict`` form, validated, its status and verdict read from its result."""
    from fitaudit.results import load_result

    register_result_types()
    part = load_result(data, AuditPart, name=name)
    assert isinstance(part, AuditPart)
    return reread(part, name=name)


def load_audit(data: dict[str, Any], *, name: str = "audit") -> AuditResult:
    """An :class:`AuditResult` from its ``to_dict`` form (an ``audit.json``), validated field by field.

    Every part's status and verdict are read again from its result
    (:func:`fitaudit.report.verdicts.read_part`): an edited status in the
    file is not believed, and one that is not a status at all is an error.
    """
    from fitaudit.results import load_result

    register_result_types()
    result = load_result(data, AuditResult, name=name)
    assert isinstance(result, AuditResult)
    for i, part in enumerate(result.parts):
        reread(part, name=name, path=f"parts[{i}].")
    return result
