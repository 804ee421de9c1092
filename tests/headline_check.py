"""What every reading's headline must be (issue 51 item 6): one short sentence with the number that decides it.

Used by ``tests/report/test_verdicts.py`` on every reading it makes (every
result type with words, every status they reach) and by
``tests/report/test_headlines.py``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

from fitaudit.report.verdicts import split_headline

#: most words in a headline (a word has a letter: ``p``, ``=``, ``0.05`` and ``<`` are not counted)
MAX_WORDS = 20

#: numbers of a verdict that are its settings, not what decided it (a level, a threshold, a power)
SETTINGS = {"level", "confidence_level", "tolerance", "threshold", "power", "relevant_gain", "material_gap",
            "material_ece", "underfit_gain", "pass_gain", "baseline_gain_needed", "memorising_accuracy",
            "g3_level", "delta", "min_reference_support", "reject", "steps", "queries", "cv_folds", "bound_limit",
            "max_undetected_share", "half", "min_rows", "min_gap"}

#: reasons whose verdict has no deciding number (a fit that failed, nothing to read)
NO_NUMBER = {"slope_undefined", "no_rule", "no_query_log", "not_ranked", "no_measure_scored", "no_column_to_slice"}

_NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?%?")


def _values(value: Any) -> Iterator[float]:
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, (int, float)):
        if math.isfinite(value):
            yield float(value)
    elif isinstance(value, str):
        for token in _NUMBER.findall(value):
            yield _parse(token)[0]
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _values(item)


def _parse(token: str) -> tuple[float, float]:
    """The value of a number as written, and half its last digit (the rounding it admits)."""
    percent = token.endswith("%")
    text = token.rstrip("%").replace(",", "").lstrip("+")
    value = float(text)
    if "e" in text:
        mantissa, exponent = text.split("e")
        decimals = len(mantissa.partition(".")[2])
        step = 10.0 ** (int(exponent) - decimals)
    else:
        step = 10.0 ** -len(text.partition(".")[2])
    if percent:
        value, step = value / 100, step / 100
    return value, step / 2


def deciding_numbers(verdict: Any) -> list[float]:
    """The verdict's numbers that may decide it (its settings left out), numbers in its strings too."""
    return [v for key, value in verdict.numbers.items() if key not in SETTINGS for v in _values(value)]


def check_headline(sentence: str, verdict: Any) -> str:
    """The headline of ``sentence``: one sentence of at most :data:`MAX_WORDS` words, with one of the verdict's
    deciding numbers in it (as written: rounded); returns it."""
    headline, details = split_headline(sentence)
    assert headline and headline.rstrip()[-1] in ".!?", sentence
    assert split_headline(headline) == (headline, ""), headline  # one sentence
    words = [w for w in headline.split() if re.search("[A-Za-z]", w)]
    assert len(words) <= MAX_WORDS, f"{len(words)} words: {headline}"
    assert details == "" or sentence == f"{headline} {details}", sentence
    if verdict.reason in NO_NUMBER:
        return headline
    written = [_parse(token) for token in _NUMBER.findall(headline)]
    candidates = deciding_numbers(verdict)
    assert any(abs(value - c) <= slack * (1 + 1e-9) + 1e-12 for value, slack in written for c in candidates), (
        headline, verdict.numbers)
    return headline


#: the words a verdict is said in (one family per status a reader acts on); a headline leads with one, then ":"
VERDICT_WORDS = re.compile(r"\b(?:inconclusive|pass(?:es|ed)?|fail(?:s|ed)?|not rejected|rejected)\b", re.I)
_LEAD = re.compile(r"\b(?:Inconclusive|Passes|Fails|Measured):")


def doubled_verdict_lines(text: str) -> list[str]:
    """The printed lines that say their verdict twice (issue 51: "Inconclusive (m = 30): Inconclusive: ..."):
    a verdict word before the headline's own leading word, or that leading word twice.

    A part's status mark (``[FAIL]``, ``[ok  ]``, ``[????]``: :data:`fitaudit.report.badges.BADGES`, the status
    column the audit's page and docs/audit.md share) is a column of symbols, not a word: it is left out first.
    """
    from fitaudit.report.badges import BADGES

    marks = "|".join(re.escape(f"[{b.mark}]") for b in BADGES.values())
    doubled = []
    for line in text.splitlines():
        bare = re.sub(rf"^\s*(?:{marks})", "", line)
        leads = list(_LEAD.finditer(bare))
        if leads and (len(leads) > 1 and leads[1].group(0) == leads[0].group(0)
                      or VERDICT_WORDS.search(bare[: leads[0].start()])):
            doubled.append(line)
    return doubled
