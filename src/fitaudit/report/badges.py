"""How a status looks: the one mapping from a verdict's status to its badge, colour, word and command-line mark.

The HTML page (badges, summary chips, card borders: their CSS is drawn from
:data:`BADGES`), the command line's marks and markdown summary, and the
table of statuses in ``docs/audit.md`` (``tests/report/test_badges.py``
compares it) all read this mapping, so a part's badge always shows the
status its ``audit.json`` verdict has.

Where the right answer is known (the demo), whether a part found it is a
separate marker beside the badge (:func:`answer_mark`), never a change of
the badge: a part that failed as it should still shows ``failed``.
"""

from __future__ import annotations

import contextlib
import contextvars
import types
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Badge:
    """The look of one status: its CSS class (the status itself), text and background colours, word and mark."""

    status: str
    colour: str
    background: str
    word: str
    mark: str


#: every status's badge, in the order of :data:`fitaudit.verdict.STATUSES`
BADGES: dict[str, Badge] = {badge.status: badge for badge in (
    Badge("fail", "#cf222e", "#ffebe9", "failed", "FAIL"),
    Badge("pass", "#1a7f37", "#dafbe1", "passed", "ok  "),
    Badge("inconclusive", "#9a6700", "#fff8c5", "inconclusive", "????"),
    Badge("info", "#0969da", "#ddf4ff", "measured", "info"),
    Badge("skipped", "#6e7781", "#eaeef2", "skipped", "skip"),
)}

#: the marker of a known answer (the demo) beside the badge: (CSS class, word, command-line mark) by whether it was met
ANSWER_MARKS = {True: ("met", "known answer found", "found"), False: ("wrong", "WRONG answer", "WRONG")}


def badge(status: str) -> Badge:
    """The badge of ``status`` (a status outside :data:`BADGES` is a bug of its instrument, not a new look)."""
    return BADGES[status]


def badge_css() -> str:
    """The style of every badge, summary chip and card border (and the colour variables), from :data:`BADGES` and :data:`ANSWER_MARKS`."""
    rules = [":root { " + " ".join(f"--{b.status}:{b.colour};" for b in BADGES.values()) + " }"]
    for b in BADGES.values():
        rules.append(f".pill.{b.status} {{ background: {b.background}; color: {b.colour}; }}")
        rules.append(f".card.{b.status} {{ border-left-color: {b.colour}; }}")
    passed, failed = BADGES["pass"], BADGES["fail"]
    rules.append(f".answer.met {{ background: {passed.background}; color: {passed.colour}; }}")
    rules.append(f".answer.wrong {{ background: {failed.colour}; color: #ffffff; }}")
    return "\n".join(rules) + "\n"


# --------------------------------------------------------------------------- known answers (the demo)


#: the known answers of the audit being drawn (:func:`known_answers`): part id -> {"text", "met"}
_KNOWN: contextvars.ContextVar[Mapping[str, Mapping[str, Any]]] = contextvars.ContextVar(
    "known_answers", default=types.MappingProxyType({}))


@contextlib.contextmanager
def known_answers(result: Any) -> Iterator[Mapping[str, Mapping[str, Any]]]:
    """While drawing ``result``: its known answers (``result.known_answers()``, the demo's hook) for :func:`known_answer`."""
    token = _KNOWN.set(result.known_answers())
    try:
        yield _KNOWN.get()
    finally:
        _KNOWN.reset(token)


def known_answer(part: Any) -> Mapping[str, Any] | None:
    """The known answer of ``part`` in the audit being drawn (``None`` outside the demo, or for a skipped part)."""
    return None if part.status == "skipped" else _KNOWN.get().get(part.id)


def answer_mark(answer: Mapping[str, Any] | None) -> tuple[str, str, str] | None:
    """(CSS class, word, command-line mark) of a known answer found or missed; ``None`` where none is known."""
    return None if answer is None else ANSWER_MARKS[bool(answer.get("met"))]
