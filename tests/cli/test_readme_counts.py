"""Every count of measures that README.md and the user guide (docs/) state is the catalogue's.

A phrase such as "45 complexity measures", "the five spectrum measures",
"two baselines" or "every measure (45)" is read from the text (digits or
number words) and compared with :data:`fitaudit.measures.catalogue.BUILTIN_MEASURES`:
the whole catalogue, or the family the phrase names (the ``family`` column
of ``fitaudit measures list``). A count before "measures" whose words are
neither a family nor a word for the whole catalogue fails too, so that a new
kind of count is looked at, not skipped.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from fitaudit.measures.catalogue import BUILTIN_MEASURES

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

UNITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
         "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
WORD = rf"(?:(?:{'|'.join(TENS)})(?:-(?:{'|'.join(UNITS[1:10])}))?|{'|'.join(UNITS)})"
NUMBER = rf"(?:\d+|{WORD})"

#: "<count> [up to three words] measures" / "... baselines" (the words may wrap onto the next line)
BEFORE = re.compile(rf"\b({NUMBER})\b((?:\s+[\w'\"-]+){{0,3}}?)\s+(measures|baselines)\b", re.IGNORECASE)
#: "every measure (45)", "all 45 measures together" is caught by BEFORE
AFTER = re.compile(r"\bevery measure \((\d+)\)", re.IGNORECASE)
#: the command ``fitaudit measures list`` (and its siblings) is no count
COMMAND = re.compile(r"\bfitaudit measures \w+")

#: words between a count and "measures" that mean the whole catalogue
WHOLE = {"", "complexity", "registered", "built-in", "generalization", "generalisation", "the"}
#: words that name a family (``Measure.family``)
FAMILY_WORDS = {"spectrum": "spectrum", "weight-spectrum": "spectrum", "fantastic": "fantastic",
                "\"fantastic\"": "fantastic", "starting-kit": "starting_kit", "starting kit": "starting_kit",
                "kit": "starting_kit", "winners'": "winners", "winners": "winners", "winning": "winners",
                "baseline": "baseline", "baselines": "baseline", "fitaudit": "fitaudit"}


def as_number(text: str) -> int:
    """``45``, ``five`` or ``forty-five`` as an int."""
    text = text.lower()
    if text.isdigit():
        return int(text)
    if text in UNITS:
        return UNITS.index(text)
    tens, _, unit = text.partition("-")
    return TENS[tens] + (UNITS.index(unit) if unit else 0)


def stated_counts(text: str) -> list[tuple[str, str | None, int]]:
    """Each count of measures in ``text``: (phrase, family or None for the whole catalogue, count).

    A phrase that is neither gets the family ``"?"``.
    """
    text = COMMAND.sub("COMMAND", text)
    counts: list[tuple[str, str | None, int]] = []
    for match in BEFORE.finditer(text):
        words = " ".join(match.group(2).split()).lower()
        phrase = " ".join(match.group(0).split())
        if match.group(3).lower() == "baselines":
            family: str | None = "baseline" if words in WHOLE else "?"
        elif set(words.split()) <= WHOLE:
            family = None
        else:
            named = {FAMILY_WORDS[w] for w in (words, *words.split()) if w in FAMILY_WORDS}
            family = named.pop() if len(named) == 1 else "?"
        counts.append((phrase, family, as_number(match.group(1))))
    for match in AFTER.finditer(text):
        counts.append((" ".join(match.group(0).split()), None, int(match.group(1))))
    return counts


def catalogue_count(family: str | None) -> int:
    if family is None:
        return len(BUILTIN_MEASURES)
    return Counter(cls.family for cls in BUILTIN_MEASURES.values())[family]


def test_reader_of_counts_on_known_phrases():
    text = ("(forty-five complexity measures, ...) # the 45 registered complexity measures\n"
            "the five spectrum\nmeasures; shipped example measures and two baselines; every measure (45) scored;"
            " run `fitaudit measures list` with --instances 8\nfitaudit measures list; 3 odd measures")
    assert stated_counts(text) == [
        ("forty-five complexity measures", None, 45), ("45 registered complexity measures", None, 45),
        ("five spectrum measures", "spectrum", 5), ("two baselines", "baseline", 2),
        ("3 odd measures", "?", 3), ("every measure (45)", None, 45)]


def test_the_readme_states_the_number_of_measures():
    counts = stated_counts((ROOT / "README.md").read_text())
    assert [count for _, family, count in counts if family is None] == [len(BUILTIN_MEASURES)] * 2


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_stated_count_of_measures_is_the_catalogues(page: Path):
    wrong = [(phrase, family, count, catalogue_count(family)) for phrase, family, count in stated_counts(page.read_text())
             if family == "?" or count != catalogue_count(family)]
    assert wrong == [], ("(phrase, family, stated, in the catalogue; '?': a count of measures the test cannot place: "
                         "name a family or the whole catalogue, or teach the test)")


def test_families_in_the_catalogue_are_the_ones_the_test_knows():
    assert {cls.family for cls in BUILTIN_MEASURES.values()} <= set(FAMILY_WORDS.values())
