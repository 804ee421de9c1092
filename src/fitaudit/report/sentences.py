"""The building blocks of every verdict's words: the headline and its details, reasons, intervals.

A reading's sentence leads with its headline, the verdict and the one
number that decides it (:func:`split_headline` finds it, :func:`said`
joins it to the details); every words module (``*_words.py``) builds its
sentences from these.
"""

from __future__ import annotations

from typing import Any

from fitaudit.verdict import Verdict

#: a full stop that ends no sentence: an abbreviation
_ABBREVIATIONS = ("e.g.", "i.e.", "al.", "vs.", "cf.")


def split_headline(sentence: str) -> tuple[str, str]:
    """(headline, details) of a reading's sentence: the headline is its first sentence.

    A sentence ends at ``.``, ``!`` or ``?`` outside brackets, followed by
    a space and a capital, a digit or ``|`` (``|k_S|``); a decimal point or
    an abbreviation (:data:`_ABBREVIATIONS`) ends none.
    """
    depth = 0
    for i, char in enumerate(sentence):
        if char in "([":
            depth += 1
        elif char in ")]":
            depth = max(0, depth - 1)
        elif (char in ".!?" and depth == 0 and sentence[i + 1:i + 2] == " "
              and (sentence[i + 2:i + 3].isupper() or sentence[i + 2:i + 3].isdigit() or sentence[i + 2:i + 3] == "|")
              and sentence[:i + 1].split()[-1].lstrip("(") not in _ABBREVIATIONS):
            return sentence[:i + 1], sentence[i + 2:].strip()
    return sentence, ""




def said(headline: str, *details: str) -> str:
    """A reading's sentence: the headline, then the details (empty ones left out)."""
    return " ".join(part.strip() for part in (headline, *details) if part and part.strip())




def reason_text(verdict: Verdict) -> str:
    """A verdict whose reason its type's words do not know, in plain words: ``"inconclusive: g3 violated
    (level = 0.05)"``. Used by the words of every type as their last resort, so a new reason in an
    instrument's decision is never silently worded as another."""
    numbers = ", ".join(f"{k} = {v:.4g}" if isinstance(v, float) else f"{k} = {v}" for k, v in verdict.numbers.items())
    return f"{verdict.status}: {verdict.reason.replace('_', ' ')}" + (f" ({numbers})." if numbers else ".")




def interval_text(low: float, high: float, level: float) -> str:
    """``"95% interval 0.491-0.553"``."""
    return f"{level:.0%} interval {low:.3f}-{high:.3f}"




def accuracy_text(result: Any) -> str:
    """``"0.522 (522 of 1000; 95% interval 0.491-0.553)"`` of an AccuracyResult."""
    return (f"{result.accuracy:.3f} ({result.correct} of {result.n}; "
            f"{interval_text(result.low, result.high, result.confidence_level)})")
