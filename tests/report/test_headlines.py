"""Every verdict leads with a short headline (issue 51 item 6): the verdict and the number that decides it.

``tests/report/test_verdicts.py`` checks the headline of every reading it
makes (every type with words, the slow ones too) with
:func:`headline_check.check_headline`; here, fast, the first questions, the
table checks and the audit, and how the command line and the page show the
headline and the details.
"""

from __future__ import annotations

import html

import numpy as np
import pytest

from fitaudit.auditing.parts import part_from_result
from fitaudit.auditing.result import AuditPart, AuditResult, PartVerdict
from fitaudit.report import audit_page
from fitaudit.report.audit import summary_text
from fitaudit.report.verdicts import read, split_headline, word_audit
from fitaudit.verdict import Verdict
from headline_check import MAX_WORDS, check_headline


def test_the_headline_is_the_first_sentence():
    assert split_headline("Fails: p = 0.003 < 0.05. It was trained on it.") == ("Fails: p = 0.003 < 0.05.",
                                                                              "It was trained on it.")
    # no end inside brackets, at a decimal point or an abbreviation; |k_S| may start a sentence
    assert split_headline("A (see Sec. 5. Then) b, e.g. Centred ones, 0.5. |k_S| = 0.") == (
        "A (see Sec. 5. Then) b, e.g. Centred ones, 0.5.", "|k_S| = 0.")
    assert split_headline("One sentence only.") == ("One sentence only.", "")


def test_the_check_refuses_a_long_headline_or_one_without_its_number():
    verdict = Verdict("fail", "toy", {"pvalue": 0.003, "level": 0.05})
    assert check_headline("Fails: p = 0.003 < 0.05. Details.", verdict) == "Fails: p = 0.003 < 0.05."
    with pytest.raises(AssertionError, match="words"):
        check_headline("Fails: " + "word " * MAX_WORDS + "p = 0.003.", verdict)
    with pytest.raises(AssertionError):  # the level is a setting, not the number that decided
        check_headline("Fails: the model depends on this data at level 0.05.", verdict)


def _first_question_results():
    from fitaudit.leakage import tabular_leakage
    from fitaudit.stats import accuracy, agreement

    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 300)
    predictions = np.where(rng.random(300) < 0.8, y, (y + 1) % 3)
    measured = accuracy(y, predictions, class_names=["a", "b", "c"])
    other = np.where(rng.random(300) < 0.6, predictions, (predictions + 1) % 3)
    x_train, x_scored = rng.random((400, 4)), rng.random((300, 4))
    return [measured, agreement(predictions, other, measured=measured), agreement(predictions, other),
            agreement(predictions, predictions, measured=measured),
            # with a 95%-accurate model: little room for gain, so the leak the twins allow moves the accuracy little
            tabular_leakage(x_scored, x_train), tabular_leakage(x_scored, x_train, y_true=y, y_pred=np.where(
                np.random.default_rng(1).random(300) < 0.95, y, (y + 1) % 3)),
            tabular_leakage(np.concatenate([x_train[:30], x_scored[30:]]), x_train, y_true=y, y_pred=predictions)]


def test_first_questions_lead_with_a_short_headline():
    results = _first_question_results()
    reasons = set()
    for result in results:
        verdict = result.verdict()
        reasons.add(verdict.reason)
        headline = check_headline(read(result).sentence, verdict)
        assert headline.startswith({"fail": ("Fails", "Leakage"), "pass": ("Passes", "No sign"),
                                    "inconclusive": ("Inconclusive",), "info": ("",)}[verdict.status])
    assert {"measured_above_estimate", "runs_nearly_never_disagree", "low_power", "no_excess_twins",
            "exact_copies_beyond_duplicate_rate"} <= reasons


def test_the_command_line_prints_the_headline_then_the_details_and_the_page_shows_both():
    from fitaudit.cli.leakage import summary

    leaked = _first_question_results()[6]
    reading = read(leaked)
    assert reading.details.startswith("Scored examples were in the training data")
    lines = summary(leaked).splitlines()
    assert lines[:2] == [reading.headline, reading.details]
    part = part_from_result("leakage", "first", "Did the scored data leak into training?", leaked)
    skipped = AuditPart(id="s", instrument="pmv", title="S", verdict=PartVerdict("skipped", "no_learner", {}, "No."))
    audit = word_audit(AuditResult(title="t", subject={}, parts=[part, skipped], settings={}, environment={},
                                   random_state=0, seconds=0.0, created="now"))
    text = summary_text(audit).splitlines()
    at = text.index(f"  [FAIL] Did the scored data leak into training?: {reading.headline}")
    assert text[at + 1] == f"          {reading.details}"
    page = audit_page(audit)
    assert (f"<p class='verdict'><strong>{html.escape(reading.headline)}</strong> "
            f"{html.escape(reading.details)}</p>") in page
