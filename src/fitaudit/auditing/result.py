"""The audit's results as pure data: :class:`AuditPart` and :class:`AuditResult`.

Nothing here draws, writes files or words a verdict: a part carries its
result and the result's own decision; :mod:`fitaudit.report` (the layer
above) puts each decision into words (:func:`fitaudit.report.verdicts.word_audit`
fills every part's ``sentence``) and turns a result into pages
(``fitaudit.report.save_audit``, ``fitaudit.report.audit_page``).
:func:`fitaudit.audit`, which sits above both, returns the worded result.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from fitaudit._errors import InputError
from fitaudit.auditing.decision import audit_verdict
from fitaudit.auditing.headlines import headline_numbers
from fitaudit.results import Result
from fitaudit.verdict import STATUSES as VERDICT_STATUSES
from fitaudit.verdict import Verdict

#: the four instruments, in report order
INSTRUMENTS = ("overfit", "examine", "pgdl", "pmv")

#: statuses of a part (:data:`fitaudit.verdict.STATUSES`): ``pass`` (no problem found), ``fail`` (a problem
#: found), ``inconclusive`` (the check's assumptions fail on these data), ``info`` (a measurement, not a
#: judgement), ``skipped`` (could not run)
STATUSES = VERDICT_STATUSES


@dataclasses.dataclass(frozen=True, repr=False)
class PartVerdict(Verdict):
    """A part's verdict as the audit stores it: the decision and the sentence that words it.

    In ``audit.json`` it is the part's ``"verdict"``: ``{"status", "reason",
    "numbers", "sentence"}``. For a part with a result, the decision is the
    result's own (``result.verdict(**context)``), decided again whenever a
    saved part is read back, and the sentence is empty until the report
    layer words it (:func:`fitaudit.report.verdicts.word_audit`). For a
    skipped part, ``sentence`` says why (a fact of the inputs, not a reading).
    """

    sentence: str = ""

    def to_dict(self) -> dict[str, Any]:
        """``{"status", "reason", "numbers", "sentence"}``, JSON-safe."""
        return {**super().to_dict(), "sentence": self.sentence}

    def __repr__(self) -> str:
        return f"{super().__repr__()}: {self.sentence}"


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
    verdict : PartVerdict
        The decision (``status``, one of :data:`STATUSES`; ``reason``;
        ``numbers``) and its ``sentence``: for a part with a result, the
        result's own verdict (``result.verdict(**context)``, context from
        ``settings``), worded by the report layer
        (:func:`fitaudit.report.verdicts.word_audit`; empty until then); for a
        skipped part, why it was skipped. ``status`` and ``sentence`` are
        also properties of the part.
    numbers : dict
        The headline numbers (name -> value), shown in the summary.
    result : Result or None
        The instrument's full result (the evidence).
    settings : dict
        Parameters of this part (levels, sizes, seeds); also what the
        reading needs besides the result (``role``, ``threshold``,
        ``tolerance``).
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
        Whether this run reused the part from the checkpoint folder.
    key : str or None
        Its checkpoint key.
    """

    id: str
    instrument: str
    title: str
    verdict: PartVerdict
    numbers: dict[str, Any] = dataclasses.field(default_factory=dict)
    result: Result | None = None
    settings: dict[str, Any] = dataclasses.field(default_factory=dict)
    images: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    evidence: list[Result] = dataclasses.field(default_factory=list)
    seconds: float = 0.0
    resumed: bool = False
    key: str | None = None

    @property
    def status(self) -> str:
        """The verdict's status (one of :data:`STATUSES`)."""
        return self.verdict.status

    @property
    def sentence(self) -> str:
        """The verdict in words (for a skipped part: why it was skipped)."""
        return self.verdict.sentence

    def _summary_fields(self) -> list[str]:
        return ["id", "status", "sentence"]


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

    def known_answers(self) -> dict[str, dict[str, Any]]:
        """Where the right answers are known in advance: ``{part id: {"text": ..., "met": bool}}``.

        The hook of an audit whose answers are known (the demo's
        ``DemoResult`` computes them from its parts); an ordinary audit
        knows none. The report shows a part with a known answer as found
        or WRONG, and the audit's verdict counts a missed one as a problem.
        """
        return {}

    def verdict(self, **context: Any) -> Verdict:
        """The audit's overall decision (:func:`fitaudit.auditing.decision.audit_verdict`)."""
        return audit_verdict(self, **context)

    def verdicts(self) -> dict[str, str]:
        """Status of every part, by id."""
        return {part.id: part.status for part in self.parts}

    def reused(self) -> list[AuditPart]:
        """The parts this run took from the checkpoint folder instead of computing them."""
        return [part for part in self.parts if part.resumed]

    def failing(self, names: Sequence[str]) -> list[str]:
        """Messages for each of ``names`` (instruments or part ids) that failed or did not run.

        Used by ``fitaudit audit --fail-on``: a chosen verdict fails when any
        of its parts has status ``fail`` or ``inconclusive`` (a check that
        could not conclude is not a pass), and also when none of them ran
        (a check that could not be made is not a pass either).
        """
        messages = []
        for name in names:
            chosen = [p for p in self.parts if name in (p.id, p.instrument)]
            if not chosen:
                known = sorted({p.id for p in self.parts} | set(INSTRUMENTS))
                raise InputError(f"`fail_on` names {name!r}, which is not an instrument or part; use {', '.join(known)}.")
            for part in chosen:
                if part.status == "fail":
                    messages.append(f"{part.id} failed: {part.sentence}")
                elif part.status == "inconclusive":
                    messages.append(f"{part.id} could not conclude: {part.sentence}")
            if all(p.status == "skipped" for p in chosen):
                messages.append(f"{name} did not run: " + "; ".join(p.sentence for p in chosen))
        return messages

    def __repr__(self) -> str:
        """The parts' statuses and their sentences as worded (the command line prints
        :func:`fitaudit.report.audit.summary_text`, with the audit's own sentence and the pipeline)."""
        lines = [f"{self.title} ({self.seconds:.0f} s)"]
        lines += [f"  [{part.status}] {part.title}" + (f": {part.sentence}" if part.sentence else "")
                  for part in self.parts]
        return "\n".join(lines)


#: the part settings that are a verdict's context
CONTEXT_KEYS = ("role", "threshold", "tolerance", "control")


def part_context(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The context a part's verdict takes, from its ``settings``."""
    return {key: settings[key] for key in CONTEXT_KEYS if key in settings}


def decided(result: Any, settings: dict[str, Any]) -> PartVerdict:
    """The verdict of ``result``: its own decision, context from a part's ``settings`` (not yet worded)."""
    verdict = result.verdict(**part_context(settings))
    return PartVerdict(verdict.status, verdict.reason, verdict.numbers)


#: a part whose verdict reads its control: the overfitting test on the scored data, and on the training data
CONTROLS = {"overfit-test": "overfit-train"}


def read_controls(parts: Sequence[AuditPart]) -> None:
    """Decide each controlled part again with its control's outcome (:data:`CONTROLS`), in place.

    The overfitting test on the model's training data is the power control
    of the test on the scored data (:func:`fitaudit.overfit.decision.overfit_verdict`'s
    ``control``): its ``status``, ``reject`` and ``pvalue`` go into the scored
    part's ``settings["control"]``, always taken from the control part's
    result (a ``control`` in a file without that part is dropped).
    """
    by_id = {part.id: part for part in parts}
    for part_id, control_id in CONTROLS.items():
        part, control = by_id.get(part_id), by_id.get(control_id)
        if part is None or part.result is None:
            continue
        settings = {key: value for key, value in part.settings.items() if key != "control"}
        evidence: Any = None if control is None else control.result
        if control is not None and evidence is not None:
            settings["control"] = {"status": control.status, "reject": bool(evidence.reject),
                                   "pvalue": float(evidence.pvalue)}
        if settings != part.settings:
            part.settings = settings
            part.verdict = decided(part.result, settings)


def _check_stored_verdict(data: Any, name: str, path: str) -> None:
    """A saved part's ``verdict`` is an object whose ``status`` is a status (one line naming the field if not)."""
    if not isinstance(data, dict) or not isinstance(data.get("verdict"), dict):
        return  # the field-by-field check of load_result names it
    status = data["verdict"].get("status")
    if status not in STATUSES:
        raise InputError(f"`{name}`: field `{path}verdict.status` must be one of {', '.join(STATUSES)}; "
                         f"got {status!r}.")


def reread(part: AuditPart, *, name: str = "part", path: str = "") -> AuditPart:
    """``part`` with its verdict decided again from its result (a status or sentence is never taken from a file).

    A part without a result must be skipped (there is nothing to decide it
    from). ``name`` and ``path`` (e.g. ``"parts[3]."``) are how an error
    names the field.
    """
    if part.result is None:
        if part.status != "skipped":
            raise InputError(f"`{name}`: field `{path}verdict.status` is {part.status!r}, but the part holds no "
                             "result to decide it from (only a skipped part has none).")
        return part
    if part.status == "skipped":
        raise InputError(f"`{name}`: field `{path}verdict.status` is 'skipped', but the part holds a result.")
    part.verdict = decided(part.result, part.settings)
    return part


def _same_number(stored: Any, computed: Any) -> bool:
    """Whether a stored headline value is the one computed (numbers to 1e-9, lists element by element)."""
    if isinstance(computed, (list, tuple)):
        return isinstance(stored, (list, tuple)) and len(stored) == len(computed) and all(
            _same_number(a, b) for a, b in zip(stored, computed))
    if isinstance(computed, str) or computed is None:
        return stored == computed
    try:
        right = float(computed)
        left = float("nan") if stored is None else float(stored)
    except (TypeError, ValueError):
        return False
    if not math.isfinite(right):  # saved as null
        return stored is None or left == right or (math.isnan(left) and math.isnan(right))
    return math.isclose(left, right, rel_tol=1e-9, abs_tol=1e-12)


def check_numbers(part: AuditPart, *, name: str = "part", path: str = "") -> None:
    """A saved part's headline ``numbers`` must be those its result gives (:func:`fitaudit.auditing.headlines.headline_numbers`): an edited
    number is refused in one line naming the field, not drawn beside the evidence it contradicts."""
    if part.result is None:
        return
    for key, computed in headline_numbers(part.result).items():
        if key in part.numbers and not _same_number(part.numbers[key], computed):
            raise InputError(f"`{name}`: field `{path}numbers[{key!r}]` is {part.numbers[key]!r}, but the part's own "
                             f"evidence gives {computed!r}; the file was edited, and is not drawn.")


def load_part(data: dict[str, Any], *, name: str = "part") -> AuditPart:
    """An :class:`AuditPart` from its ``to_dict`` form, validated, its verdict decided again from its result."""
    from fitaudit.results import load_result

    _check_stored_verdict(data, name, "")
    part = load_result(data, AuditPart, name=name)
    assert isinstance(part, AuditPart)
    return reread(part, name=name)


def load_audit(data: dict[str, Any], *, name: str = "audit") -> AuditResult:
    """An :class:`AuditResult` from its ``to_dict`` form (an ``audit.json``), validated field by field.

    Every part's verdict is decided again from its result (the result's own
    ``verdict()``, worded by :mod:`fitaudit.report.verdicts`): an edited
    status or sentence in the file is not believed, and a status that is
    not a status at all is an error.
    """
    from fitaudit.results import load_result

    for i, part in enumerate(data.get("parts") or [] if isinstance(data, dict) else []):
        _check_stored_verdict(part, name, f"parts[{i}].")
    result = load_result(data, AuditResult, name=name)
    assert isinstance(result, AuditResult)
    for i, part in enumerate(result.parts):
        reread(part, name=name, path=f"parts[{i}].")
        check_numbers(part, name=name, path=f"parts[{i}].")
    read_controls(result.parts)
    return result
