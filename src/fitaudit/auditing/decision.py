"""The audit's overall decision, from its parts' verdicts.

A part is a *problem* when it failed, or, where its right answer is known in
advance (the demo), when it missed that answer. The audit fails when any
part is a problem; otherwise it is ``inconclusive`` when a check could not
conclude, ``pass`` when some check passed, and ``info`` when nothing could
pass or fail.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fitaudit.verdict import Verdict


def problems(result: Any, known: Mapping[str, Mapping[str, Any]]) -> list[Any]:
    """The parts that count as problems: failed parts, and parts whose known answer was not found.

    ``known``: ``result.known_answers()`` (the demo's; none in an ordinary audit).
    """
    found = []
    for part in result.parts:
        if part.status == "skipped":
            continue
        if part.id in known:
            if not known[part.id].get("met"):
                found.append(part)
        elif part.status == "fail":
            found.append(part)
    return found


def audit_verdict(result: Any, **_: Any) -> Verdict:
    """The audit's answer: ``fail`` on any problem (see the module docstring)."""
    answers = result.known_answers()  # computed from the parts (the demo's): asked once
    bad = problems(result, answers)
    ran = [p for p in result.parts if p.status != "skipped"]
    known = [p for p in ran if p.id in answers]
    numbers: dict[str, Any] = {"problems": len(bad), "ran": len(ran),
                               "inconclusive": sum(p.status == "inconclusive" for p in ran),
                               "skipped": len(result.parts) - len(ran)}
    if known:
        met = sum(bool(answers[p.id].get("met")) for p in known)
        numbers.update(known=len(known), met=met, other_failures=sum(p.id not in answers for p in bad))
        return Verdict("fail" if bad else "pass", "known_answers_missed" if bad else "known_answers_found", numbers)
    if bad:
        return Verdict("fail", "problems_found", numbers)
    if numbers["inconclusive"]:
        return Verdict("inconclusive", "checks_inconclusive", numbers)
    if any(p.status == "pass" for p in ran):
        return Verdict("pass", "no_problem_found", numbers)
    return Verdict("info", "nothing_to_judge", numbers)
