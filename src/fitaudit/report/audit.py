"""Renderers of :class:`fitaudit.auditing.AuditResult`: the HTML report and a markdown summary.

The page reads top-down: the question and the overall answer, one card per
part (its verdict in plain words and the numbers behind it), the
overfitting tests side by side (training vs test data, or several models on
one test set), then the evidence per instrument (plots, images, rules,
tables, warnings), then the run's parameters, seeds, versions and timings.
The evidence is drawn by :mod:`fitaudit.report.audit_evidence`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Sequence
from typing import Any

from fitaudit.checkpoint import (
    atomic_path,
    atomic_write_text,
    check_folder,
    remove_stale_temporaries,
)
from fitaudit.report.audit_evidence import instrument_evidence, part_pill
from fitaudit.report.badges import BADGES, answer_mark, badge, known_answer, known_answers
from fitaudit.report.html import esc, grid, key_values, number, page
from fitaudit.report.pipelines import pipeline_lines
from fitaudit.report.verdicts import read, split_headline, verdict_json, word_audit

INSTRUMENT_NAMES = {
    "first": "The first questions",
    "overfit": "Overfitting test",
    "examine": "Adversarial examiner",
    "pgdl": "Generalization measures (PGDL)",
    "pmv": "Perturbed model validation",
}

INSTRUMENT_QUESTIONS = {
    "first": "How precise is the measured accuracy, did the scored data leak into training, do independent runs agree? (user guide: docs/first-questions.md)",
    "overfit": "Is the model independent of the data it is scored on? (Werpachowski, György, Szepesvári, NeurIPS 2019)",
    "examine": "What is its worst case over the input factors, and where does it fail? (Shu, Liu, Qiu, Yuille, AAAI 2020)",
    "pgdl": "Which measures, computed from weights and training data alone, predict the generalization gap? (Jiang et al., NeurIPS 2020 competition)",
    "pmv": "Does the learner's capacity fit the data, or does it memorise noise? (Zhang, Barr, Guedj, Harman, Shawe-Taylor 2019)",
}

#: how many headline numbers a summary card shows
_CARD_NUMBERS = 4




# --------------------------------------------------------------------------- summary


def _headline(result: Any) -> str:
    """The audit's sentence and one chip per status: how many parts have it, counted as in ``audit.json``."""
    answer = read(result).sentence
    counts = {status: sum(part.status == status for part in result.parts) for status in BADGES}
    pills = "".join(f"<span class='pill {status}'>{n} {esc(badge(status).word)}</span>"
                    for status, n in counts.items() if n)
    return f"<p><strong>{esc(answer)}</strong></p><div class='headline'>{pills}</div>"


def _card(part: Any) -> str:
    numbers = list(part.numbers.items())[:_CARD_NUMBERS]
    expected = ""
    answer = known_answer(part)
    if answer is not None:
        met = bool(answer.get("met"))
        expected = (f"<div class='expected {'met' if met else 'unmet'}'>Known answer: "
                    f"{esc(answer.get('text', ''))} &mdash; {'found' if met else 'NOT found'}</div>")
    table = key_values(numbers) if numbers and part.status != "skipped" else ""
    headline, details = split_headline(part.sentence)
    return (
        f"<article class='card {esc(part.status)}' id='card-{esc(part.id)}'>"
        f"<div class='instrument'>{esc(INSTRUMENT_NAMES.get(part.instrument, part.instrument))} {part_pill(part, answer=True)}</div>"
        f"<h3>{esc(part.title)}</h3><p class='verdict'><strong>{esc(headline)}</strong>"
        f"{' ' + esc(details) if details else ''}</p>{table}{expected}</article>"
    )


# --------------------------------------------------------------------------- run details


def _details(result: Any) -> str:
    timing = grid(
        ["part", "status", "seconds", "reused from the checkpoint folder"],
        [[esc(p.id), part_pill(p), esc(number(p.seconds, 1)), esc("yes" if p.resumed else "no")] for p in result.parts],
    )
    settings_rows = [(k, v) for k, v in result.settings.items() if not isinstance(v, (dict, list))]
    per_part = "".join(
        f"<details><summary>{esc(p.id)}</summary><pre>{esc(_pretty(p.settings))}</pre></details>"
        for p in result.parts if p.settings
    )
    versions = result.environment.get("versions", {})
    env = ", ".join(f"{k} {v}" for k, v in versions.items())
    return (
        f"<div class='panel'><h4>Subject</h4><pre>{esc(_pretty(result.subject))}</pre>"
        f"<h4>Settings</h4>{_plain_table(settings_rows)}"
        f"<p>Random seed: <code>{esc(result.random_state)}</code>. Total time of this run: "
        f"{esc(number(result.seconds, 1))} s.</p>"
        f"<h4>Timings</h4>{timing}<h4>Parameters of each part</h4>{per_part}"
        f"<h4>Environment</h4><p class='note'>{esc(env)}; {esc(result.environment.get('platform', ''))}; "
        f"{esc(result.environment.get('cpus', '?'))} CPUs.</p></div>"
    )


def _plain_table(rows: Sequence[tuple[str, Any]]) -> str:
    return "<table class='kv'>" + "".join(
        f"<tr><th>{esc(k)}</th><td style='white-space:normal'>{esc(v)}</td></tr>" for k, v in rows) + "</table>"


def _pretty(value: Any) -> str:
    import json

    return json.dumps(value, indent=1, default=str)


# --------------------------------------------------------------------------- renderers


def audit_html(
    result: Any, *, render: Callable[..., Any], standalone: bool = True, json_digest: str | None = None
) -> str:
    """The report: a full page (``standalone``), or that page in an ``<iframe srcdoc>`` for notebooks.

    ``render``: what draws the parts' results (:func:`fitaudit.report.render`,
    which hands itself over: this module imports no dispatch of its own).

    ``json_digest``: the SHA-256 of the ``audit.json`` text the page is drawn
    from, named in its footer (:func:`page_digest` reads it back); default:
    that of ``result``'s own JSON. Where the audit knows its right answers
    (``result.known_answers()``, the demo's hook), every part shows whether
    it found its own.
    """
    word_audit(result)
    with known_answers(result):
        return _audit_html(result, render=render, standalone=standalone, json_digest=json_digest)


def _audit_html(result: Any, *, render: Callable[..., Any], standalone: bool, json_digest: str | None) -> str:
    json_digest = json_digest or json_digest_of(audit_json_text(result))
    subject = result.subject
    accuracy = ""
    if subject.get("accuracy") is not None:
        accuracy = f" Accuracy on the scored data: {number(subject['accuracy'])}"
        if subject.get("accuracy_interval") is not None:
            low, high = subject["accuracy_interval"]
            accuracy += f" (95% interval {number(low)}-{number(high)}, exact)"
        if subject.get("train_accuracy") is not None:
            accuracy += f"; on the training data: {number(subject['train_accuracy'])}"
        accuracy += "."
    accuracy += "".join(f" {line}" for line in pipeline_lines(subject.get("pipeline")))
    body = [
        "<header class='top'>",
        f"<h1>{esc(result.title)}</h1>",
        f"<div class='sub'>Can this model's measured performance be trusted? {esc(subject.get('description', ''))}"
        f"{esc(accuracy)} Made {esc(result.created)} by fitaudit {esc(result.environment.get('versions', {}).get('fitaudit', ''))}.</div>",
        _headline(result),
        "</header>",
        "<h2>Summary</h2>",
        f"<div class='cards'>{''.join(_card(p) for p in result.parts if p.status != 'skipped')}</div>",
    ]
    skipped = [p for p in result.parts if p.status == "skipped"]
    if skipped:
        body.append("<h3 class='notrun'>Not run</h3><div class='panel'><ul class='notrun'>" + "".join(
            f"<li><strong>{esc(p.title)}</strong>: {esc(p.sentence)}</li>" for p in skipped) + "</ul></div>")
    body.append("<h2>Evidence</h2>")
    for instrument in INSTRUMENT_NAMES:
        parts = [p for p in result.parts if p.instrument == instrument]
        if not parts or all(p.status == "skipped" for p in parts):
            continue
        body.append(f"<h3 id='evidence-{instrument}'>{esc(INSTRUMENT_NAMES[instrument])}</h3>")
        body.append(f"<p class='note'>{esc(INSTRUMENT_QUESTIONS[instrument])}</p>")
        body.append(instrument_evidence(instrument, parts, render))
    body.append("<h2>Parameters, seeds, versions, timings</h2>")
    body.append(_details(result))
    drawn = f" Drawn from the audit.json whose SHA-256 is <code>{esc(json_digest)}</code>."
    body.append(f"<footer {_DIGEST_ATTRIBUTE}='{esc(json_digest)}'>Self-contained report: every image is embedded; "
                "the page loads nothing from the network. The same content is in audit.json; "
                f"<code>fitaudit report audit.json</code> rebuilds this page.{drawn}</footer>")
    document = page(result.title, "".join(body))
    if standalone:
        return document
    # in a notebook: the same page in a frame, so its style sheet cannot touch the notebook's
    return (f"<iframe class='fitaudit-report' srcdoc=\"{esc(document)}\" title='{esc(result.title)}' "
            "style='width: 100%; height: 900px; border: 1px solid #d1d9e0; border-radius: 8px'></iframe>")


def audit_markdown(result: Any) -> str:
    """A text summary: one line per part."""
    word_audit(result)
    lines = [f"# {result.title}", "", read(result).sentence, ""]
    with known_answers(result):
        for part in result.parts:
            lines.append(f"- **{part.title}** ({badge(part.status).word}): {part.sentence}")
            answer = known_answer(part)
            if answer is not None:
                lines.append(f"  - known answer: {answer['text']} ({'found' if answer['met'] else 'NOT found'})")
    return "\n".join(lines)


# --------------------------------------------------------------------------- files


#: the footer attribute naming the digest of the audit.json a page was drawn from
_DIGEST_ATTRIBUTE = "data-audit-json-sha256"
_DIGEST_PATTERN = re.compile(_DIGEST_ATTRIBUTE + "='([0-9a-f]{64})'")


def write_page(result: Any, path: Any = None, *, render: Callable[..., Any], json_digest: str | None = None) -> Any:
    """The self-contained HTML page of ``result``; written atomically to ``path`` if given (returns the path).

    The page names ``json_digest`` (default: that of ``result``'s own JSON),
    the SHA-256 of the audit.json it is drawn from.
    """
    document = audit_html(result, render=render, json_digest=json_digest)
    if path is None:
        return document
    return atomic_write_text(path, document)


def audit_json_text(result: Any) -> str:
    """The text of ``audit.json``: the audit's verdict first (the contract of docs/verdicts.md), then its fields."""
    word_audit(result)
    return json.dumps({"verdict": verdict_json(result), **result.to_dict()}, indent=1)


def summary_text(result: Any) -> str:
    """The audit in text, as the command line prints it: its sentence, the pipeline, per part its status's mark
    and headline on one line and its details on the next.

    What was reused from the checkpoint folder is counted in the first line;
    where the audit knows its right answers (the demo), each part says
    whether it found its own.
    """
    word_audit(result)
    reused = len(result.reused())
    ran = sum(part.key is not None for part in result.parts)  # skipped parts have no key
    timing = f"{result.seconds:.0f} s" + (f"; {reused} of {ran} parts reused from the checkpoint folder"
                                          if reused else "")
    known = result.known_answers()
    lines = [f"{result.title} ({timing}): {read(result).sentence}"]
    lines += [f"  {line}" for line in pipeline_lines(result.subject.get("pipeline"))]
    for part in result.parts:
        answer = known.get(part.id) if part.status != "skipped" else None
        mark = answer_mark(answer)
        beside = f" [{mark[2]}]" if mark is not None else ""
        lines += part_lines(part.status, part.title, part.sentence, beside)
        if answer is not None:
            lines.append(f"          known answer: {answer['text']} ({'found' if answer['met'] else 'NOT found'})")
    return "\n".join(lines)


def part_lines(status: str, title: str, sentence: str, beside: str = "") -> list[str]:
    """One part as the command line prints it: its status's mark (:func:`fitaudit.report.badges.badge`, the
    status column the page and docs/audit.md share), the title and the headline, which leads with the verdict's
    word, on one line; the details on the next. The status is never said as a word before the headline too."""
    headline, details = split_headline(sentence)
    return [f"  [{badge(status).mark}]{beside} {title}: {headline}"] + ([f"          {details}"] if details else [])


def json_digest_of(text: str) -> str:
    """The SHA-256 of an ``audit.json`` text, as a page names it (:func:`page_digest` reads it back)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def page_digest(path: Any) -> str | None:
    """The digest of the audit.json a saved page names (None: no page, or a page that names none)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            handle.seek(max(0, os.fstat(handle.fileno()).st_size - 4096))  # the footer is at the end
            found = _DIGEST_PATTERN.search(handle.read())
    except OSError:
        return None
    return found.group(1) if found else None


def save_audit(result: Any, out: Any, *, render: Callable[..., Any]) -> dict[str, Any]:
    """Write ``audit.json`` and ``report.html`` of ``result`` into the folder ``out`` as one unit.

    Both are rendered in memory and written in full to temporary files
    before either replaces the old one (a full disk leaves both old files);
    then the JSON is renamed into place and the page right after it. The
    page names the JSON's digest, so a kill between the two renames leaves a
    page that :func:`fitaudit.report.saved.repair_page` (run by
    ``fitaudit audit`` and ``fitaudit demo`` before their work) finds stale
    and draws again. Temporary files left
    by a killed run are removed (:func:`fitaudit.checkpoint.remove_stale_temporaries`).
    """
    target = check_folder(out, "out")
    remove_stale_temporaries(target)
    text = audit_json_text(result)
    document = audit_html(result, render=render, json_digest=json_digest_of(text))
    json_path, html_path = target / "audit.json", target / "report.html"
    with atomic_path(html_path) as html_tmp, atomic_path(json_path) as json_tmp:  # inner (JSON) renamed first
        for tmp, content in ((json_tmp, text), (html_tmp, document)):
            with open(tmp, "wb") as handle:
                handle.write(content.encode("utf-8"))
                handle.flush()
                os.fsync(handle.fileno())
    return {"json": json_path, "html": html_path}
