"""The user guide (docs/) stays in step with the code it describes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fitaudit.measures import list_measures
from fitaudit.measures.base import registered

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_measures_page_lists_every_registered_measure_with_its_family():
    text = (DOCS / "measures.md").read_text()
    listed = dict(re.findall(r"^\| `([a-z0-9_]+)` \| ([a-z_]+) \|", text, flags=re.MULTILINE))
    assert sorted(listed) == list_measures()
    for name, family in listed.items():
        assert registered()[name].family == family, name


def test_every_page_in_the_navigation_exists():
    nav = (DOCS.parent / "mkdocs.yml").read_text()
    pages = re.findall(r":\s*([\w/-]+\.md)\s*$", nav, flags=re.MULTILINE)
    assert pages, "no pages found in mkdocs.yml"
    missing = [page for page in pages if not (DOCS / page).is_file()]
    assert not missing


@pytest.mark.parametrize("page", ["overfit.md", "pmv.md", "examiner.md", "pgdl.md"])
def test_each_instrument_page_says_what_it_answers_assumes_and_how_to_read_it(page):
    text = (DOCS / page).read_text()
    for heading in ("## What it answers", "## How to read"):
        assert heading in text, (page, heading)
