"""The report page's text: CSS escapes reach the page as written, and the leakage table's values wrap.

The browser test (tests/report/test_browser.py) checks the same at a phone's
width where Chromium is installed; these run everywhere.
"""

from __future__ import annotations

import re

import numpy as np

from fitaudit.leakage import tabular_leakage
from fitaudit.report.first_questions import leakage_html
from fitaudit.report.html import STYLE, page

#: a CSS escape: a backslash, 1-6 hex digits and at most one white-space character that ends it (CSS Syntax 4.3.7)
CSS_ESCAPE = re.compile(r"\\([0-9a-fA-F]{1,6})[ \t\n]?")


def _css_text(literal: str) -> str:
    """A CSS string's value, its hex escapes decoded."""
    return CSS_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), literal)


def _generated_content() -> list[str]:
    return [_css_text(text) for text in re.findall(r'content:\s*"([^"]*)"', STYLE)]


def test_page_has_no_control_characters():
    text = page("report", "<p>body</p>")
    controls = sorted({f"U+{ord(c):04X}" for c in text if ord(c) < 32 and c not in "\n\t" or 127 <= ord(c) < 160})
    assert controls == []


def test_swipe_hint_starts_with_the_left_right_arrow():
    hints = [text for text in _generated_content() if "swipe" in text]
    assert hints == ["\u2194 swipe sideways to see every column"]


def test_check_marks_decode_to_their_glyphs():
    marks = {text.strip() for text in _generated_content() if "swipe" not in text}
    assert marks == {"\u2713", "\u2717"}


def test_leakage_facts_table_wraps_and_has_no_swipe_hint():
    rng = np.random.default_rng(0)
    train = rng.normal(size=(60, 3))
    scored = np.vstack([train[:3], rng.normal(size=(20, 3))])
    html = leakage_html(tabular_leakage(scored, train))
    facts = re.search(r"<div class='scroll facts'><table class='grid'>(.*?)</table>", html)
    assert facts is not None, html[:500]
    assert "<td>threshold</td>" in facts.group(1) and "quantile" in facts.group(1)
    # the rule that makes its cells wrap, and the phone's swipe hint is not drawn above it
    rule = re.search(r"div\.scroll\.facts table\.grid td \{([^}]*)\}", STYLE)
    assert rule is not None and "white-space: normal" in rule.group(1)
    assert re.search(r"div\.scroll:not\(\.plot\):not\(\.facts\)::before", STYLE)
    # the nearest pairs below it stay a wide table that scrolls
    assert "<div class='scroll'><table class='grid'>" in html
