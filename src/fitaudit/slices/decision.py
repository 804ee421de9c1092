"""The decision on a slice search (:func:`fitaudit.slices.find_weak_slices`).

``fail``
    a slice is flagged: its one-sided Fisher p-value, adjusted by
    Benjamini-Hochberg in its family (slices of one column, pairs; half the
    level each), is at most the level, and its
    accuracy is at least ``min_gap`` below the rest's; the verdict names the
    first group (the most significant slice, in the user's column names);
``pass``
    no slice is flagged and the search could see one: a slice of
    ``min_rows`` rows (or, when not even that, of a tenth of the rows)
    whose accuracy is ``detectable_gap`` below the rest's is flagged with
    80% power (:attr:`~fitaudit.slices.SliceResult.detectable`);
``inconclusive``
    only when the rows cannot tell anything: no column could be sliced,
    fewer than ``2 min_rows`` rows (no slice with a rest), or not even a
    slice that is always wrong would be seen with 80% power.

``min_gap`` (default 0.05) is fitaudit's convention of a gap that matters:
with many rows a gap of 0.01 is significant, and every real model has one
somewhere.
"""

from __future__ import annotations

from typing import Any

from fitaudit.verdict import Verdict


def slice_verdict(result: Any, **_: Any) -> Verdict:
    """The decision on a :class:`~fitaudit.slices.SliceResult` (see the module docstring)."""
    numbers: dict[str, Any] = {"n": result.n, "accuracy": result.accuracy, "level": result.level,
                               "min_rows": result.min_rows, "min_gap": result.min_gap, "tried": result.n_tried,
                               "flagged": result.n_flagged, "groups": result.n_groups,
                               "power": result.power}
    seen = [d for d in result.detectable if d["gap"] is not None]
    if seen:
        numbers.update(detectable_rows=seen[0]["rows"], detectable_gap=seen[0]["gap"])
    if result.groups:
        worst = result.groups[0]
        return Verdict("fail", "weak_slice", {
            **numbers, "slice": worst["text"], "slice_rows": worst["rows"], "slice_accuracy": worst["accuracy"],
            "rest_accuracy": worst["rest_accuracy"], "pvalue": worst["pvalue"], "qvalue": worst["qvalue"]})
    if not result.columns:
        return Verdict("inconclusive", "no_column_to_slice", numbers)
    if result.n < 2 * result.min_rows:
        return Verdict("inconclusive", "too_few_rows", numbers)
    if not seen:
        return Verdict("inconclusive", "cannot_see_a_slice", numbers)
    return Verdict("pass", "no_weak_slice", numbers)


def slice_contradiction(result: Any) -> str | None:
    """Where a saved slice search disagrees with its counts: the accuracies, and each group's flag."""
    from fitaudit.results import first_mismatch, mismatch

    checks = [mismatch("accuracy", result.accuracy, result.correct / result.n if result.n else 0.0)]
    for i, group in enumerate(result.groups):
        checks += [mismatch(f"groups[{i}].accuracy", group["accuracy"], group["correct"] / group["rows"]),
                   mismatch(f"groups[{i}].rest_accuracy", group["rest_accuracy"],
                            group["rest_correct"] / group["rest_rows"]),
                   mismatch(f"groups[{i}].rows", group["rows"] + group["rest_rows"], result.n)]
        if not (group["qvalue"] <= result.level and group["gap"] >= result.min_gap - 1e-12):
            checks.append(f"`groups[{i}]` is listed as flagged, but its q-value {group['qvalue']:.3g} and gap "
                          f"{group['gap']:.3g} do not flag it at level {result.level:g} and min_gap "
                          f"{result.min_gap:g}")
    if len(result.groups) > result.n_groups or result.n_groups > result.n_flagged:
        checks.append(f"`n_groups` is {result.n_groups} with {len(result.groups)} groups listed and "
                      f"{result.n_flagged} slices flagged")
    return first_mismatch(*checks)
