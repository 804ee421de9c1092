"""The words of the weak-slice search and of the label problems (docs/slices.md, docs/labels.md).

Each function puts the result's own verdict into words: a short headline
with the verdict and the number that decided it first, the details after.
They are registered in :data:`fitaudit.report.verdicts.WORDS`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from fitaudit.verdict import Verdict

#: flagged rows named in the sentence of the label problems (all are in the result)
NAMED_ROWS = 5


def _p(value: Any) -> str:
    """A p-value: two significant digits, scientific below 0.001."""
    v = float(value)
    return "n/a" if not math.isfinite(v) else f"{v:.1e}" if v < 1e-3 else f"{v:.2g}"


def _slice_line(group: Mapping[str, Any]) -> str:
    """``"worst area > 1,239: 0.000 on 50 rows vs 0.955 elsewhere"``."""
    return (f"{group['text']}: {group['accuracy']:.3f} on {int(group['rows']):,} rows vs "
            f"{group['rest_accuracy']:.3f} elsewhere")


def _weak_slice_words(group: Mapping[str, Any], n: int) -> str:
    """``"Weak slice"``, or, for a slice of more than half the scored rows, the reading that fits it: the few
    rows outside do better (``"Weak slice of 86% of the rows (the other 14% are easier)"``)."""
    share = int(group["rows"]) / n
    if share <= 0.5:
        return "Weak slice"
    return f"Weak slice of {share:.0%} of the rows (the other {1 - share:.0%} are easier)"


def _skipped_columns(result: Any) -> str:
    skipped = result.skipped_columns
    if not skipped:
        return ""
    named = "; ".join(f"{name!r}: {why}" for name, why in skipped.items())
    return f" Not sliced: {named}."


def _seen(result: Any) -> str:
    """What the search could see (the pass's power statement): ``"it flags a slice of 20 rows 0.428 or more
    below the rest and one of 10,000 rows 0.050 or more below with 80% power"``."""
    seen = [d for d in result.detectable if d["gap"] is not None]
    parts = [f"{'a slice' if i == 0 else 'one'} of {int(d['rows']):,} rows {d['gap']:.3f} or more below"
             + (" the rest" if i == 0 else "") for i, d in enumerate(seen)]
    return f"it flags {' and '.join(parts)} with {result.power:.0%} power"


def say_slices(result: Any, verdict: Verdict, **_: Any) -> str:
    """Where the model fails: the weakest slice of the scored rows against the rest, or what the search could see.

    The family: every slice tried (of one column and of two), Benjamini-Hochberg at ``level``.
    """
    half = result.level / 2 if result.n_pair_family else result.level
    pairs = (f" and {result.n_pairs:,} of two (Benjamini-Hochberg at {half:g} over all {result.n_pair_family:,} "
             "pairs of single slices of different columns, of which those of the best singles were tested)"
             if result.n_pair_family else "")
    family = (f"{result.n_single:,} slices of one column (Benjamini-Hochberg at {half:g}){pairs}, each with at "
              f"least {result.min_rows} rows in and out, one-sided Fisher exact tests, false-discovery rate "
              f"{result.level:g} in all, flagged from a gap of {result.min_gap:g}")
    level = f"{result.confidence_level:.0%}"
    if verdict.status == "fail":
        worst = result.groups[0]
        text = (f"{_weak_slice_words(worst, result.n)}: {_slice_line(worst)} (q = {_p(worst['qvalue'])}). "
                f"Exact {level} intervals "
                f"{worst['low']:.3f}-{worst['high']:.3f} in the slice and {worst['rest_low']:.3f}-"
                f"{worst['rest_high']:.3f} outside; p = {_p(worst['pvalue'])} before the adjustment. The family: "
                f"{family}.")
        if worst["n_same"]:
            more = worst["n_same"] - len(worst["same_rows"])
            text += (f" Nearly the same rows (a Jaccard overlap of {result.settings['same_rows']:.0%} or more): "
                     f"{', '.join(worst['same_rows'])}"
                     + (f" (and {more} more)" if more > 0 else "") + ".")
        text += (f" {result.n_flagged:,} slices flagged, in {result.n_groups} distinct "
                 f"group{'s' if result.n_groups != 1 else ''}")
        others = result.groups[1:]
        if others:
            text += "; also: " + "; ".join(
                f"{_slice_line(g)} ({g['rows_outside_earlier']:,} rows outside the groups before it, "
                f"p = {_p(g['pvalue_outside_earlier'])} there)" for g in others)
        return text + "." + _skipped_columns(result)
    if verdict.reason == "no_weak_slice":
        text = (f"No weak slice among {result.n_tried:,} tried (accuracy {result.accuracy:.3f} on {result.n:,} "
                f"rows): none is {result.min_gap:g} or more below the rest at false-discovery rate "
                f"{result.level:g}. At this n {_seen(result)}. The family: {family}.")
        if result.weakest is not None:
            text += f" Weakest slice tried: {_slice_line(result.weakest)} (q = {_p(result.weakest['qvalue'])})."
        return text + _skipped_columns(result)
    if verdict.reason == "no_column_to_slice":
        return "Inconclusive: no column could be sliced." + _skipped_columns(result)
    if verdict.reason == "too_few_rows":
        return (f"Inconclusive: {result.n:,} scored rows are too few for a slice of {result.min_rows} rows with "
                f"{result.min_rows} outside it.")
    if verdict.reason == "cannot_see_a_slice":
        return (f"Inconclusive: at n = {result.n:,} (accuracy {result.accuracy:.3f}) not even a slice of "
                f"{result.min_rows} rows that is always wrong would be flagged with {result.power:.0%} power. The "
                f"family: {family}." + _skipped_columns(result))
    return f"{verdict.status}: {verdict.reason.replace('_', ' ')}."


def _row_text(result: Any, row: Mapping[str, Any]) -> str:
    return (f"row {row['index']} (label {result.class_name(int(row['label']))!r} at probability "
            f"{row['label_probability']:.3f}; the model says {result.class_name(int(row['suggested']))!r} at "
            f"{row['suggested_probability']:.3f})")


def say_labels(result: Any, verdict: Verdict, **_: Any) -> str:
    """Which scored labels are likely wrong, and whether correcting them moves the accuracy out of its interval."""
    level = f"{result.confidence_level:.0%}"
    interval = f"{level} interval {result.low:.3f}-{result.high:.3f}"
    flagged = f"{result.n_flagged:,} flagged label{'s' if result.n_flagged != 1 else ''}"
    leave = verdict.numbers.get("rows_to_leave")
    needed = (f"it would take {leave:,} corrected rows to leave it" if leave is not None
              else "no correction can leave it")
    if result.n_flagged == 0:
        text = (f"No label problem: no scored label is flagged (accuracy {result.accuracy:.3f}, {interval}; "
                f"{needed}).")
    elif verdict.status == "fail":
        text = (f"Label problems: correcting the {flagged} would move the accuracy from {result.accuracy:.3f} to "
                f"{result.corrected_accuracy:.3f}, above its {interval}.")
    elif verdict.reason == "explained_by_model_uncertainty":
        text = (f"Inconclusive: correcting only the {result.unexplained:,} flagged labels the model's uncertainty "
                f"does not explain leaves the accuracy inside its interval. Correcting all {flagged} would move it "
                f"from {result.accuracy:.3f} to {result.corrected_accuracy:.3f}, above its {interval}, but the "
                "model's own uncertainty explains that many confident disagreements, so label errors cannot be told "
                "from classes that overlap.")
    else:
        text = (f"No label problem that moves the accuracy: correcting the {flagged} gives "
                f"{result.corrected_accuracy:.3f}, inside its {interval}. The measured accuracy is "
                f"{result.accuracy:.3f}; {needed}.")
    groups = ("rows not compared" if result.conflict_groups is None else
              f"{result.conflict_groups} group{'s' if result.conflict_groups != 1 else ''} of equal rows with "
              "different labels")
    uncertain = (f" Confident rows whose label is not the model's suggestion: {result.confident_errors:,}; were the "
                 f"labels drawn from its probabilities, {result.expected_confident_errors:.1f} would be expected and "
                 f"up to {result.explained_confident_errors:,} explained (p = {_p(result.uncertainty_pvalue)}), so "
                 f"{result.unexplained:,} are unexplained; correcting only those gives "
                 f"{(result.correct + result.unexplained) / result.n:.3f}.")
    text += uncertain if result.n_flagged else ""
    text += (f" Found by confident learning (cleanlab {result.settings.get('cleanlab')}, "
             f"{result.settings.get('filter_by')}, on the model's out-of-sample probabilities): "
             f"{result.by_confident_learning:,}; by exact conflicting labels: {result.by_conflict:,} ({groups}).")
    if result.rows:
        named = "; ".join(_row_text(result, row) for row in result.rows[:NAMED_ROWS])
        rest = result.n_flagged - min(NAMED_ROWS, len(result.rows))
        text += f" Flagged: {named}" + (f"; and {rest:,} more (the result lists them)" if rest > 0 else "") + "."
    return text
