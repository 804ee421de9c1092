"""The adversarial examiner's decision (Shu et al. 2020): does the average hide weak spots?

The average accuracy is the model's on uniform random factors (the
examination's reference queries); the worst-case accuracy is the share of
examined instances of which no examiner query was misclassified. An
examination fails when the worst case is more than :data:`EXAMINE_TOLERANCE`
below the average (fitaudit's convention; the paper reports the two numbers
side by side). An examination looking for strength (``maximize=False``), or
one without query log or without reference queries (no average to compare
with), is a measurement. A worst case below the average in a space foreign to
the model (``result.space_check``, :func:`fitaudit.examine.scenarios.space_check`:
random factors cost it more than the check's threshold of its accuracy on
untouched inputs) is ``inconclusive``: the failures may belong to the space,
transformations the model was never meant to meet, rather than to the model;
the verdict then names the factor that makes the space foreign: where the
factors were screened one by one (a user's images,
:func:`fitaudit.examine.scenarios.factor_screen`), the examined factor that
alone costs the most accuracy beyond the threshold; otherwise the factor
whose far-from-default random queries lose the most accuracy against its
near ones (:func:`fitaudit.examine.scenarios.factor_drops`), when one loses
any. Factors the screen left out of the examination (foreign factors of the
default space) are listed in the verdict's numbers (``left_out``), whatever
the verdict.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fitaudit.verdict import Verdict

#: default largest drop from average to worst-case accuracy that passes an examination
EXAMINE_TOLERANCE = 0.2


def examination_accuracies(result: Any) -> tuple[float | None, float | None]:
    """(average accuracy on uniform random factors, worst-case accuracy over the examined instances).

    An instance counts as broken when any examiner query of it was
    misclassified; ``None`` where the query logs are absent.
    """
    queries, reference = result.queries or {}, result.reference_queries or {}
    average = None
    if reference and len(reference.get("label", [])):
        average = 1.0 - float(np.mean(np.asarray(reference["predicted"]) != np.asarray(reference["label"])))
    worst = None
    if queries and len(queries.get("label", [])):
        wrong = np.asarray(queries["predicted"]) != np.asarray(queries["label"])
        broken = np.unique(np.asarray(queries["instance"])[wrong])
        worst = 1.0 - len(broken) / max(len(result.instances), 1)
    return average, worst


def foreign_factor(check: dict[str, Any]) -> dict[str, Any] | None:
    """The factor that makes the space foreign (module docstring), or None when none can be named.

    With a per-factor screen (``factors_alone``): the examined factor that
    alone costs the most, beyond the threshold; without: the factor whose far
    random queries lose the most accuracy (the first ``factor_drops`` row),
    when they lose any.
    """
    alone = check.get("factors_alone")
    if alone is not None:
        foreign = [row for row in alone if not row["left_out"] and row["drop"] > check["factor_threshold"]]
        return max(foreign, key=lambda row: row["drop"]) if foreign else None
    rows = check.get("factor_drops") or []
    return rows[0] if rows and rows[0]["drop"] > 0 else None


def left_out_factors(check: dict[str, Any] | None) -> list[str]:
    """The factors the per-factor screen left out of the examination (foreign factors of the default space)."""
    return [row["factor"] for row in (check or {}).get("factors_alone") or [] if row["left_out"]]


def examination_verdict(result: Any, *, tolerance: float = EXAMINE_TOLERANCE, **_: Any) -> Verdict:
    """``fail`` when the worst-case accuracy is more than ``tolerance`` below the average (``inconclusive`` in a
    foreign space; module docstring)."""
    average, worst = examination_accuracies(result)
    numbers: dict[str, Any] = {"average_accuracy": average, "worst_case_accuracy": worst,
                               "tolerance": float(tolerance), "steps": int(result.steps),
                               "queries": int(result.n_model_queries)}
    if not result.maximize:
        return Verdict("info", "looking_for_strength", {
            **numbers, "mean_best_true_class_probability": float(result.mean_extreme_true_class_probability)})
    if worst is None:
        return Verdict("info", "no_query_log", numbers)
    if average is None:  # no uniform random queries (``n_reference=0``): nothing to hold the worst case against
        return Verdict("info", "no_reference_queries", numbers)
    check = getattr(result, "space_check", None)
    if left_out_factors(check):
        numbers["left_out"] = ", ".join(left_out_factors(check))
    if average - worst > tolerance:
        if check and check.get("foreign"):
            numbers.update(clean_accuracy=check["clean_accuracy"], random_accuracy=check["random_accuracy"],
                           foreign_drop=check["threshold"])
            culprit = foreign_factor(check)
            if culprit is not None and "images" in culprit:  # a row of the per-factor screen
                numbers.update(foreign_factor=culprit["factor"], factor_far_accuracy=culprit["far_accuracy"],
                               factor_clean_accuracy=culprit["clean_accuracy"], factor_split=culprit["split"],
                               foreign_factor_drop=check["factor_threshold"])
            elif culprit is not None:
                numbers.update(foreign_factor=culprit["factor"], factor_near_accuracy=culprit["near_accuracy"],
                               factor_far_accuracy=culprit["far_accuracy"], factor_split=culprit["split"])
            return Verdict("inconclusive", "foreign_space", numbers)
        return Verdict("fail", "worst_case_below_average", numbers)
    return Verdict("pass", "worst_case_within_tolerance", numbers)


def _column_mismatch(field: str, stored: Any, computed: Any) -> str | None:
    """The first entry where a saved per-instance array differs from what its evidence gives (``None``: equal)."""
    from fitaudit.results import mismatch

    left, right = np.asarray(stored, dtype=np.float64), np.asarray(computed, dtype=np.float64)
    if left.shape != right.shape:
        return f"`{field}` has shape {left.shape}, but its evidence gives {right.shape}"
    for i in np.flatnonzero(~np.isclose(left, right, rtol=1e-9, atol=1e-12, equal_nan=True))[:1]:
        return mismatch(f"{field}[{i}]", float(left[i]), float(right[i]))
    return None


def _drops_mismatch(stored: list[dict[str, Any]], reference: dict[str, Any], space: dict[str, Any]) -> str | None:
    """Where the space check's per-factor drops differ from those of the reference queries."""
    from fitaudit.examine.scenarios import factor_drops
    from fitaudit.results import first_mismatch, mismatch

    computed = factor_drops(reference, space)
    if [row["factor"] for row in stored] != [row["factor"] for row in computed]:
        return (f"`space_check.factor_drops` lists {[row['factor'] for row in stored]}, but the reference queries "
                f"give {[row['factor'] for row in computed]}")
    return first_mismatch(*(mismatch(f"space_check.factor_drops[{i}].{field}", left[field], right[field])
                            for i, (left, right) in enumerate(zip(stored, computed))
                            for field in ("near_accuracy", "far_accuracy", "n_near", "n_far", "split", "drop")))


def examination_contradiction(result: Any) -> str | None:
    """Where a saved examination disagrees with its own evidence.

    The per-instance final and extreme losses and true-class probabilities
    are the last column of their curves (the step-T mean and the running
    extreme); the counts of queries are the lengths of the query logs; the
    space check's accuracy under random factors and its count are those of
    the reference queries (the number the verdict compares the worst case
    with), its ``drop`` is clean minus random accuracy, its ``threshold``
    :data:`fitaudit.examine.scenarios.FOREIGN_DROP`, ``foreign`` what the
    drop (or the per-factor screen's drops) gives
    (:func:`fitaudit.examine.scenarios.is_foreign`), each screened factor's
    drop its clean minus its alone accuracy, and its per-factor drops those
    of the reference queries.
    """
    from fitaudit.examine.scenarios import FOREIGN_DROP, is_foreign
    from fitaudit.results import first_mismatch, mismatch

    found: list[str | None] = []
    extreme = ("min_true_class_probability", "worst_loss") if result.maximize else \
        ("max_true_class_probability", "best_loss")
    for quantity, fields in (("true_class_probability", ("final_true_class_probability", extreme[0])),
                             ("loss", ("final_loss", extreme[1]))):
        curves = (result.curves or {}).get(quantity) or {}
        for kind, field in zip(("current", "running"), fields):
            curve = np.asarray(curves.get(kind, []), dtype=np.float64)
            if curve.ndim == 2 and curve.shape[1]:
                found.append(_column_mismatch(field, getattr(result, field), curve[:, -1]))
    queries, reference = result.queries or {}, result.reference_queries or {}
    if queries:
        found.append(mismatch("n_model_queries", int(result.n_model_queries), len(queries["label"])))
    if reference:
        found.append(mismatch("n_reference_queries", int(result.n_reference_queries), len(reference["label"])))
    check = getattr(result, "space_check", None)
    if check:
        if reference and len(reference["label"]):
            correct = np.asarray(reference["predicted"]) == np.asarray(reference["label"])
            found += [mismatch("space_check.random_accuracy", check["random_accuracy"], float(correct.mean())),
                      mismatch("space_check.n_random", check["n_random"], len(correct))]
        found += [mismatch("space_check.drop", check["drop"], check["clean_accuracy"] - check["random_accuracy"]),
                  mismatch("space_check.threshold", check["threshold"], FOREIGN_DROP),
                  mismatch("space_check.foreign", check["foreign"], is_foreign(check))]
        found += [mismatch(f"space_check.factors_alone[{i}].drop", row["drop"], row["clean_accuracy"] - row["far_accuracy"])
                  for i, row in enumerate(check.get("factors_alone") or [])]
        if "factor_drops" in check and reference:
            found.append(_drops_mismatch(check["factor_drops"], reference, result.factor_space))
    return first_mismatch(*found)


def weakness_verdict(report: Any, *, min_reference_support: int, **_: Any) -> Verdict:
    """Where the failures concentrate (a measurement): the headline rule, when one is confirmed.

    A rule is confirmed (:attr:`fitaudit.examine.weakness.WeaknessReport.headline`)
    when its region holds at least the minimum of random reference queries
    and its lift interval lies above 1 (``min_reference_support``: that minimum).
    """
    if report.headline is not None:
        return Verdict("info", "failures_concentrate", {"rule": report.headline["text"]})
    if not report.rules:
        return Verdict("info", "no_rule")
    return Verdict("info", "no_rule_confirmed", {"rules": len(report.rules),
                                                 "min_reference_support": min_reference_support})
