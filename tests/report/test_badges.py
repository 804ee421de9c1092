"""The page's badges and chips say what audit.json says (issue 51 item 1): one mapping from status to badge.

The page is parsed back (its badges per part, its summary chips) and compared
with the statuses in the JSON it was drawn from, on an audit that knows its
answers (the demo's hook), where parts failed or were inconclusive as they
should: their badge shows their status, the known answer is a marker beside it.
"""

from __future__ import annotations

import re
from pathlib import Path

from fitaudit.auditing.result import AuditPart, AuditResult, PartVerdict
from fitaudit.report import audit_page, render
from fitaudit.report.audit import audit_json_text, summary_text
from fitaudit.report.badges import BADGES, badge_css
from fitaudit.verdict import STATUSES
from page_badges import check_page_against_json, json_statuses, page_badges

DOCS = Path(__file__).resolve().parents[2] / "docs"


class _Known(AuditResult):
    """An audit that knows its answers (as the demo's DemoResult)."""

    answers: dict = {}

    def known_answers(self):
        return self.answers


def _part(part_id, status):
    return AuditPart(id=part_id, instrument="pmv", title=part_id.upper(),
                     verdict=PartVerdict(status, "toy", {}, f"{part_id} sentence"))


def known_audit():
    """Parts of every status; the failed and the inconclusive ones are known answers found, one pass is WRONG."""
    parts = [_part("f1", "fail"), _part("f2", "fail"), _part("i1", "inconclusive"), _part("i2", "inconclusive"),
             _part("i3", "inconclusive"), _part("p1", "pass"), _part("n1", "info"), _part("s1", "skipped")]
    result = _Known(title="t", subject={}, parts=parts, settings={}, environment={}, random_state=0, seconds=0.0,
                    created="now")
    result.answers = {"f1": {"text": "rejected", "met": True}, "f2": {"text": "rejected", "met": True},
                      "i1": {"text": "cannot tell", "met": True}, "i2": {"text": "cannot tell", "met": True},
                      "p1": {"text": "rejected", "met": False}}
    return result


def test_the_page_badges_and_chips_are_the_json_statuses(tmp_path):
    result = known_audit()
    saved = audit_page(result, tmp_path / "report.html")
    document = Path(saved).read_text()
    text = audit_json_text(result)
    check_page_against_json(document, text)
    assert json_statuses(text)["f1"] == "fail" and page_badges(document).chips["inconclusive"] == 3
    # the known answers are a marker beside the badge: found for the failures that are right, WRONG for p1
    answers = page_badges(document).card_answers
    assert answers == {"f1": "met", "f2": "met", "i1": "met", "i2": "met", "p1": "wrong"}


def test_the_command_line_marks_are_the_statuses_and_the_known_answers_beside():
    text = summary_text(known_audit())
    assert "  [FAIL] [found] F1: f1 sentence" in text
    assert "  [????] [found] I1: i1 sentence" in text and "  [????] I3: i3 sentence" in text
    assert "  [ok  ] [WRONG] P1: p1 sentence" in text and "  [skip] S1: s1 sentence" in text
    markdown = render(known_audit(), "markdown")
    assert "- **F1** (failed): f1 sentence" in markdown and "- **I1** (inconclusive): i1 sentence" in markdown


def test_one_badge_per_status_and_its_style_on_the_page():
    assert tuple(BADGES) == STATUSES
    css = badge_css()
    for status, b in BADGES.items():
        assert f".pill.{status} {{ background: {b.background}; color: {b.colour}; }}" in css
        assert f".card.{status} {{ border-left-color: {b.colour}; }}" in css
    assert css in audit_page(known_audit())


def test_the_docs_name_the_statuses_and_badges_of_the_report():
    """docs/audit.md's table of statuses: the JSON's status, the badge's word, as in BADGES, every one."""
    text = (DOCS / "audit.md").read_text()
    rows = re.findall(r"^\| `([a-z]+)` \| \*\*([a-z ]+)\*\* \|", text, flags=re.MULTILINE)
    assert sorted(rows) == sorted((status, b.word) for status, b in BADGES.items())
    verdicts = (DOCS / "verdicts.md").read_text()
    assert sorted(re.findall(r"^\| `([a-z]+)` \|", verdicts, flags=re.MULTILINE)) == sorted(STATUSES)
