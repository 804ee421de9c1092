"""The demo's known answers, computed from its parts, and :class:`DemoResult`, the audit that knows them.

An ordinary audit knows no answer in advance
(:meth:`fitaudit.auditing.result.AuditResult.known_answers` is empty); the
demo's audit does, and the report and the audit's verdict ask it through
that hook. The answers are computed from the parts' results and numbers
every time they are asked for, never read from a file, so an edited
``audit.json`` cannot claim an answer its evidence does not give.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from fitaudit.auditing.result import AuditPart, AuditResult
from fitaudit.demo.planted import planted_known_answer
from fitaudit.demo.rotation import rotation_known_answers
from fitaudit.demo.selection import selection_known_answers

#: the memorising tree's PMV score must be below this (near 0) besides being the lowest of the learners
PMV_NEAR_ZERO = 0.1


def _expect(text: str, met: bool) -> dict[str, Any]:
    return {"text": text, "met": bool(met)}


def _examine_planted(part: AuditPart) -> dict[str, Any]:
    numbers = part.numbers
    outside = numbers["failure rate, random factors with |elevation| > 30"]
    inside = numbers["failure rate, random factors with |elevation| <= 30"]
    weakness = getattr(part.result, "weakness", None)
    headline = weakness.headline if weakness is not None else None
    named = headline is not None and any(c[0] == "camera_elevation" for c in headline["conditions"])
    return _expect("failures concentrate at |elevation| > 30 and the headline weakness rule (confirmed by random "
                   "queries) names the elevation",
                   outside is not None and inside is not None and outside > 2 * inside and named)


def known_answers(parts: Sequence[AuditPart]) -> dict[str, dict[str, Any]]:
    """``{part id: {"text", "met"}}`` for every part present with a result whose right answer is known."""
    by_id = {p.id: p for p in parts if p.result is not None}

    def reject(part_id: str) -> bool:
        return bool(getattr(by_id[part_id].result, "reject", False))

    pmv = {p.id: float(getattr(p.result, "score", "nan")) for p in by_id.values() if p.instrument == "pmv"}
    checks: dict[str, Callable[[], dict[str, Any]]] = {
        "overfit-synthetic-independent": lambda: _expect("not rejected: it never saw the test set",
                                                         not reject("overfit-synthetic-independent")),
        "overfit-synthetic-dependent": lambda: _expect("rejected: it was trained on half of the test set",
                                                       reject("overfit-synthetic-dependent")),
        "overfit-shapes-train": lambda: _expect("rejected: the CNN was trained on these images",
                                                reject("overfit-shapes-train")),
        "overfit-shapes-heldout": lambda: _expect("not rejected: these objects were never seen",
                                                  not reject("overfit-shapes-heldout")),
        "examine-planted": lambda: _examine_planted(by_id["examine-planted"]),
        "pgdl-zoo": lambda: _expect(
            "the noisy true gap ranks above the parameter count and the VC dimension",
            by_id["pgdl-zoo"].settings["ranks"]["noisy_gap"] < min(by_id["pgdl-zoo"].settings["ranks"][name]
                                                                 for name in ("parameter_count", "vc_dim"))),
        "pmv-tree": lambda: _expect("the lowest |k_S| of the learners, near 0: it memorises the flipped labels",
                                    pmv["pmv-tree"] == min(pmv.values()) and pmv["pmv-tree"] < PMV_NEAR_ZERO),
        "leakage-planted": lambda: planted_known_answer(by_id["leakage-planted"]),
    }
    answers = {part_id: check() for part_id, check in checks.items() if part_id in by_id}
    answers.update(selection_known_answers(by_id))
    answers.update(rotation_known_answers(by_id))
    return {p.id: answers[p.id] for p in parts if p.id in answers}  # in the parts' order


@dataclasses.dataclass(repr=False)
class DemoResult(AuditResult):
    """The demo's audit: an :class:`~fitaudit.auditing.result.AuditResult` whose right answers are known.

    :meth:`known_answers` (the hook the report and the audit's verdict ask)
    computes them from the parts each time; :meth:`to_dict` writes them
    beside the parts for readers of ``audit.json``, and loading ignores that
    copy.
    """

    def known_answers(self) -> dict[str, dict[str, Any]]:
        """``{part id: {"text", "met"}}``, from the parts' results (:func:`known_answers`)."""
        return known_answers(self.parts)

    def to_dict(self) -> dict[str, Any]:
        """Every field, and the known answers as computed now (a copy: computed again when read back)."""
        return {**super().to_dict(), "known_answers": self.known_answers()}


def as_demo(data: Any) -> Any:
    """A demo's ``audit.json`` from before :class:`DemoResult` (parts carrying ``"expected"``) read as one.

    Anything else is returned as it is; the old ``"expected"`` entries are
    ignored on loading (the answers are computed again).
    """
    parts = data.get("parts") if isinstance(data, dict) and data.get("type") == "AuditResult" else None
    if isinstance(parts, list) and any(isinstance(p, dict) and p.get("expected") is not None for p in parts):
        return {**data, "type": DemoResult.__name__}
    return data
