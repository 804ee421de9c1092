"""The words of an audit's overall answer (:func:`fitaudit.auditing.decision.audit_verdict`): the problems found.

Registered in :data:`fitaudit.report.verdicts.WORDS`.
"""

from __future__ import annotations

from typing import Any

from fitaudit.report.sentences import reason_text
from fitaudit.verdict import Verdict


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
