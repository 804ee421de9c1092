"""Reading a report page's badges back (tests/report/test_badges.py, the demo's and the browser's tests).

The page's badges per part (its card's, its row's in the timing table) and
its summary chips (their class and the count they print), parsed from the
HTML, against the statuses of the ``audit.json`` it was drawn from.
"""

from __future__ import annotations

import json
from collections import Counter
from html.parser import HTMLParser


class PageBadges(HTMLParser):
    """The badges of a page: each card's (``card-<id>``), each row's of the timing table, and the summary chips
    (their class and the count they print)."""

    def __init__(self):
        super().__init__()
        self.cards: dict[str, str] = {}
        self.card_answers: dict[str, str] = {}
        self.chips: dict[str, int] = {}
        self.rows: dict[str, str] = {}
        self._card: str | None = None
        self._chip: str | None = None
        self._cell: str | None = None
        self._in_headline = False
        self._headers: list[str] = []
        self._row: list[str] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        classes = (attributes.get("class") or "").split()
        if tag == "article" and "card" in classes:
            self._card = attributes["id"].removeprefix("card-")
        elif tag == "div" and "headline" in classes:
            self._in_headline = True
        elif tag == "table":
            self._headers = []
        elif tag == "th":
            self._headers.append("")
        elif tag == "tr":
            self._row = []
        elif tag == "td":
            self._cell = ""
        if tag == "span" and "pill" in classes:
            status = next(c for c in classes if c != "pill")
            if self._in_headline:
                self._chip = status
                self.chips[status] = 0
            elif self._card is not None and self._card not in self.cards:
                self.cards[self._card] = status
            elif self._cell is not None and len(self._row) == 1:
                self._row.append(status)
        if tag == "span" and "answer" in classes and self._card is not None:
            self.card_answers[self._card] = classes[-1]

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data
        elif self._chip is not None:
            self.chips[self._chip] = int(data.split()[0])
        elif self._headers and not self._row:
            self._headers[-1] += data

    def handle_endtag(self, tag):
        if tag == "article":
            self._card = None
        elif tag == "span":
            self._chip = None
        elif tag == "div" and self._in_headline and self._chip is None:
            self._in_headline = False
        elif tag == "td" and self._cell is not None:
            if not self._row:
                self._row.append(self._cell)
            self._cell = None
        elif tag == "tr" and len(self._row) == 2 and "seconds" in self._headers:
            self.rows[self._row[0]] = self._row[1]


def page_badges(document: str) -> PageBadges:
    """The badges of ``document``."""
    parser = PageBadges()
    parser.feed(document)
    return parser


def json_statuses(text: str) -> dict[str, str]:
    """Each part's status in an ``audit.json`` text."""
    return {part["id"]: part["verdict"]["status"] for part in json.loads(text)["parts"]}


def check_page_against_json(document: str, text: str) -> None:
    """Every badge of the page is its part's status in the JSON; the chips count the JSON's statuses."""
    statuses = json_statuses(text)
    found = page_badges(document)
    assert found.rows == statuses  # the timing table: one badge per part, skipped ones too
    assert found.cards == {k: v for k, v in statuses.items() if v != "skipped"}
    assert found.chips == dict(Counter(statuses.values()))
