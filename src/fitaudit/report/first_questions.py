"""The first questions of an audit as tables and pictures (docs/first-questions.md).

HTML renderers of :class:`~fitaudit.stats.AccuracyResult` (overall and
per-class accuracy with exact intervals), :class:`~fitaudit.leakage.LeakageResult`
(counts, accuracy with and without the twins, the nearest pairs) and
:class:`~fitaudit.stats.AgreementResult` (the agreement estimate beside the
measured accuracy), and the evidence section of the audit's first parts
(the pairs drawn side by side from the pixels the part keeps).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from fitaudit.report.html import esc, grid, number
from fitaudit.report.verdicts import read

#: near pairs listed in the leakage table
LISTED_PAIRS = 20


def _interval(low: float, high: float) -> str:
    return "n/a" if not np.isfinite(low) else f"{low:.3f}-{high:.3f}"


def accuracy_html(result: Any) -> str:
    """Overall and per-class accuracy with their exact intervals."""
    level = f"{result.confidence_level:.0%} interval (exact)"
    rows = [["<strong>all</strong>", esc(f"{result.correct} / {result.n}"), esc(number(result.accuracy)),
             esc(_interval(result.low, result.high))]]
    for c in range(len(result.class_total)):
        total = int(result.class_total[c])
        rows.append([esc(result.class_name(c)), esc(f"{int(result.class_correct[c])} / {total}"),
                     esc(number(result.class_correct[c] / total) if total else "no examples"),
                     esc(_interval(result.class_low[c], result.class_high[c]))])
    return f"<p>{esc(read(result).sentence)}</p>" + grid(["class", "correct", "accuracy", level], rows)


def accuracy_markdown(result: Any) -> str:
    """The reading of an accuracy with its interval."""
    return read(result).sentence


def leakage_html(result: Any) -> str:
    """Counts, the accuracy with and without the twins, and the nearest pairs."""
    rows = [["near twins (exact included)", esc(f"{result.n_near} of {result.n_scored} ({result.fraction_near:.2%})")],
            ["exact copies", esc(result.n_exact)], ["feature space", esc(result.space)],
            ["threshold", esc(f"{result.threshold:.4g}" + (f" (quantile {result.quantile:g} of the training rows' "
                                                           "distances to their nearest distinct training row)"
                                                           if result.quantile else
                                                           f" ({result.threshold_rule})" if result.threshold_rule
                                                           else " (given)"))],
            ["training rows within it (the null)", esc(f"{result.null_near} of {result.n_calibration}")],
            ["training rows equal to another", esc(f"{result.null_exact} of {result.n_train}")]]
    numbers = result.verdict().numbers
    for label, key in (("near twins", "detectable_share_near"), ("exact copies", "detectable_share_exact")):
        share = numbers.get(key)
        rows.append([f"smallest leaked share of {label} detected with 80% power",
                     esc("none (not even all of them)" if share is None else f"{share:.1%}")])
    rows.append(["pairs beyond the data's own repeats", esc("not told (most training rows repeat)"
                                                            if numbers.get("n_beyond_repeats") is None
                                                            else numbers["n_beyond_repeats"])])
    rows.append(["most an undetected leak could raise the accuracy (lower end of the accuracy's interval)",
                 f"<span class='wrap'>{esc(_bound_cell(numbers))}</span>"])
    if result.left_out_columns:
        rows.append(["columns left out (identifier-like)",
                     esc(", ".join(f"{name} ({why})" for name, why in result.left_out_columns.items()))])
    for label, acc in (("accuracy with the twins", result.accuracy), ("accuracy without them", result.accuracy_without)):
        if acc is not None:
            rows.append([label, esc(f"{acc.accuracy:.3f} ({acc.correct} of {acc.n}; "
                                    f"{acc.confidence_level:.0%} interval {acc.low:.3f}-{acc.high:.3f})")])
    table = grid(["", ""], rows, facts=True)
    header, pairs = pair_rows(result, LISTED_PAIRS)
    # the files and values (columns 6 on) wrap inside their cells: a table of 8-value rows fits a laptop's width
    listed = grid(header, [[esc(cell) if i < 5 else f"<span class='wrap'>{esc(cell)}</span>"
                            for i, cell in enumerate(row)] for row in pairs]) if pairs else ""
    return f"<p>{esc(read(result).sentence)}</p>{table}{listed}"


def _bound_cell(numbers: dict[str, Any]) -> str:
    """The bound on the accuracy (:func:`fitaudit.leakage.decision.bound_numbers`) and what a pass needs."""
    if numbers.get("accuracy_bound") is None:
        return "no bound (a test cannot see even a fully leaked set)"
    if numbers.get("bound_limit") is None:
        return (f"{numbers['accuracy_bound']:.1%}, the detectable share (no predictions); a pass needs "
                f"{numbers['max_undetected_share']:.0%} or less")
    return (f"{numbers['accuracy_bound_high']:.2g} ({numbers['accuracy_bound']:.2g} at the accuracy, "
            f"{numbers['accuracy_bound_low']:.2g} at its upper end); a pass needs {numbers['bound_limit']:.2g} or less "
            "(a quarter of its interval's half-width)")


def _values(values: np.ndarray) -> str:
    return ", ".join(f"{float(v):.4g}" for v in values)


def pair_rows(result: Any, limit: int) -> tuple[list[str], list[list[str]]]:
    """The nearest ``limit`` near pairs as text: header and rows.

    Scored and training index, distance, kind (``exact``: equal to a
    training row; ``near, horizontal flip``: near under the edit named,
    :attr:`fitaudit.leakage.result.LeakageResult.near_edit`), whether the pair is beyond what the data's own
    repeats explain (``yes`` for the closest ones, as many as the excess:
    :meth:`fitaudit.leakage.LeakageResult.beyond_repeats`), and, where the result has them, both images' files
    (image folders), both rows in the user's columns (tables) or both rows'
    first values side by side (arrays).
    """
    header = ["scored", "training", "distance", "kind", "beyond repeats"]
    if result.near_scored_file is not None:
        header += ["scored file", "training file"]
    if result.near_scored_values is not None:
        shown = int(np.shape(result.near_scored_values)[1]) if result.n_near else 0
        first = f" (first {shown} of {result.n_columns})" if result.n_columns and result.n_columns > shown else ""
        header += [f"scored values{first}", "training values"]
    if result.pair_columns is not None:
        header += [f"scored row ({', '.join(result.pair_columns)})", "training row"]
    exact = set(result.exact_scored.tolist())
    beyond = set(result.beyond_repeats().tolist())
    rows = []
    for position in result.pair_order()[:limit]:
        i = int(result.near_scored[position])
        edit = result.pair_edit(int(position))
        kind = "exact" if i in exact else "near" if edit in (None, "none") else f"near, {edit}"
        row = [str(i), str(int(result.near_train[position])), f"{float(result.near_distance[position]):.4f}", kind,
               "yes" if int(position) in beyond else ""]
        files = result.pair_files(int(position))
        if files is not None:
            row += list(files)
        values = result.pair_values(int(position))
        if values is not None:
            row += [_values(values[0]), _values(values[1])]
        both = result.pair_rows(int(position))
        if both is not None:
            row += [", ".join(both[0]), ", ".join(both[1])]
        rows.append(row)
    return header, rows


def leakage_markdown(result: Any) -> str:
    """The reading and the nearest pairs as rows."""
    lines = [read(result).sentence]
    header, rows = pair_rows(result, LISTED_PAIRS)
    for row in rows:
        scored, train, distance, kind, beyond, *shown = row  # the files, or the values, of both (pair_rows)
        both = f" ({shown[0]} ~ {shown[1]})" if shown else ""
        excess = ", beyond the data's own repeats" if beyond else ""
        lines.append(f"- scored {scored} ~ training {train}{both}: distance {distance} ({kind}{excess})")
    return "\n".join(lines)


def agreement_html(result: Any) -> str:
    """The agreement estimate beside the measured accuracy, with their intervals."""
    level = f"{result.confidence_level:.0%} interval (exact)"
    rows = [["agreement of the two runs (1 - disagreement)", esc(f"{result.agree} / {result.n}"),
             esc(number(result.estimate)), esc(_interval(result.low, result.high))]]
    if result.measured is not None:
        m = result.measured
        rows.append(["measured accuracy", esc(f"{m.correct} / {m.n}"), esc(number(m.accuracy)),
                     esc(_interval(m.low, m.high))])
    note = ("<p class='note'>The estimate uses no labels: choosing a model by its score on this data cannot raise "
            "it. It cannot see training on this data (both runs would fit it): that is the overfitting test's job.</p>")
    return f"<p>{esc(read(result).sentence)}</p>" + grid(["", "count", "value", level], rows) + note


def agreement_markdown(result: Any) -> str:
    """The reading of the agreement estimate."""
    return read(result).sentence


def pair_caption(pair: dict[str, Any]) -> str:
    """``"scored 12 | training 340: distance 0.0123"``, with the two files when the pair names them."""
    scored, train = pair.get("scored"), pair.get("train")
    if pair.get("scored_file") is not None:
        scored, train = f"{scored} ({pair['scored_file']})", f"{train} ({pair.get('train_file')})"
    return f"scored {scored} | training {train}: distance {float(pair.get('distance', 0)):.4f}"


#: this module's renderers by (result type, format), gathered by :func:`fitaudit.report.renderer_table`
RENDERERS: dict[tuple[str, str], Callable[..., Any]] = {
    ("AccuracyResult", "html"): accuracy_html,
    ("AccuracyResult", "markdown"): accuracy_markdown,
    ("LeakageResult", "html"): leakage_html,
    ("LeakageResult", "markdown"): leakage_markdown,
    ("AgreementResult", "html"): agreement_html,
    ("AgreementResult", "markdown"): agreement_markdown,
}
