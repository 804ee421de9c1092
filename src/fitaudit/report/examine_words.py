"""The words of the adversarial examiner (Shu et al. 2020): the worst case against the average, the weakness rule,
and the space check's warning.

The decisions are :mod:`fitaudit.examine.decision`'s. Registered in
:data:`fitaudit.report.verdicts.WORDS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fitaudit.report.numbers import fixed
from fitaudit.report.sentences import reason_text, said
from fitaudit.verdict import Verdict


def say_weakness(report: Any, verdict: Verdict, **_: Any) -> str:
    """Where the failures concentrate: the headline rule (:attr:`fitaudit.examine.weakness.WeaknessReport.headline`),
    its region and lift first, then what the rule's queries show.

    Only a confirmed rule is said to concentrate the failures: its region
    holds at least the minimum of random reference queries and its lift
    interval lies above 1 (the decision: :func:`fitaudit.examine.decision.weakness_verdict`).
    """
    if verdict.reason == "failures_concentrate":
        rule = report.headline
        region, _colon, shown = str(verdict.numbers["rule"]).partition(": ")
        lift = f" (lift {float(rule['lift']):.1f})" if rule is not None and rule.get("lift") is not None else ""
        return said(f"Failures concentrate where {region}{lift}.", f"There: {shown}." if shown else "")
    if verdict.reason == "no_rule":
        return "No factor range concentrates the failures (no rule)."
    return said(f"No factor range is shown to concentrate the failures (none of {verdict.numbers['rules']} candidate "
                "rules is confirmed).",
                f"A rule is confirmed when at least {verdict.numbers['min_reference_support']} random queries fall in "
                "its region and its lift interval lies above 1.")




def foreign_space_text(result: Any) -> str:
    """A sentence when the examined space is foreign to the model (``result.space_check``), else ``""``.

    :func:`fitaudit.examine.scenarios.space_check` flags a space whose random
    factors cost the model more accuracy than its threshold (each factor
    alone, where the factors were screened: :func:`fitaudit.examine.scenarios.factor_screen`):
    the failures found there may belong to the space rather than to the model.
    """
    from fitaudit.examine.decision import foreign_factor

    check = getattr(result, "space_check", None)
    if not check or not check.get("foreign"):
        return ""
    culprit = foreign_factor(check)
    if culprit is not None and "images" in culprit:  # the per-factor screen's row
        return (f" The failures may belong to the space rather than the model: "
                f"{_alone_text(culprit)} (a drop above {fixed(check['factor_threshold'], 2)}, the most of any factor "
                "set); "
                f"narrow it (--factor {culprit['factor']}=LOW:HIGH) to the variation the model must withstand.")
    text = (f" The failures may belong to the space rather than the model: on {check['reference']}, random factors "
            f"take its accuracy from {fixed(check['clean_accuracy'], 2)} untouched to {fixed(check['random_accuracy'], 2)} "
            f"(a drop above {fixed(check['threshold'], 2)})")
    if culprit is None:
        return text + "; narrow the factors to the variation it must withstand."
    name, unit = culprit["factor"], f" {culprit['unit']}" if culprit["unit"] else ""
    return (text + f". The factor that costs most is {name}: the random queries with {name} more than {culprit['split']:g}{unit} "
            f"from {culprit['default']:g} are right {fixed(culprit['far_accuracy'], 2)} of the time against "
            f"{fixed(culprit['near_accuracy'], 2)} with it nearer ({culprit['n_far']} and {culprit['n_near']} queries), "
            f"the largest drop of any factor; narrow it (--factor {name}=LOW:HIGH) to the variation the model must "
            "withstand.")


def _alone_text(row: Mapping[str, Any]) -> str:
    """``"blur alone, more than 0.4 px from 0 (0 to 0.8 px examined), takes the accuracy of 96 images the model
    classifies correctly untouched from 1.00 to 0.45 (192 queries)"``: a row of the per-factor screen."""
    unit = f" {row['unit']}" if row["unit"] else ""
    return (f"{row['factor']} alone, more than {row['split']:g}{unit} from {row['default']:g} ({row['low']:g} to "
            f"{row['high']:g}{unit} examined), takes the accuracy of {row['images']} images the model classifies "
            f"correctly untouched from {fixed(row['clean_accuracy'], 2)} to {fixed(row['far_accuracy'], 2)} "
            f"({row['n_far']:,} queries)")


def left_out_text(result: Any) -> str:
    """A sentence naming the factors the per-factor screen left out of the examination, else ``""``."""
    check = getattr(result, "space_check", None) or {}
    rows = [row for row in check.get("factors_alone") or [] if row["left_out"]]
    if not rows:
        return ""
    return (f" Left out of the examination as foreign to the model (a drop above {fixed(check['factor_threshold'], 2)} "
            f"alone): {'; '.join(_alone_text(row) for row in rows)}; the verdict is over the other factors "
            f"(--factor {rows[0]['factor']}=LOW:HIGH examines it anyway).")


def say_examination(result: Any, verdict: Verdict, **_: Any) -> str:
    """The adversarial examiner (Shu et al. 2020): a headline with the worst-case accuracy against the average
    (the decision: :func:`fitaudit.examine.decision.examination_verdict`), then the examiner, the weakness
    rule and the space check."""
    average, worst = verdict.numbers.get("average_accuracy"), verdict.numbers.get("worst_case_accuracy")
    where = ""
    if result.weakness is not None and result.weakness.headline is not None:
        where = " " + say_weakness(result.weakness, result.weakness.verdict())
    where += foreign_space_text(result) + left_out_text(result)
    accuracies = f"worst-case accuracy {fixed(worst, 2)} against {fixed(average, 2)} on random factors"
    examined = (f"Examined by the {result.examiner} examiner (T = {result.steps}, {result.n_model_queries} "
                f"queries).{where}")
    if verdict.reason == "looking_for_strength":
        return (f"Looking for strength, not weakness: best-case true-class probability "
                f"{result.mean_extreme_true_class_probability:.2f} on average "
                f"({result.examiner} examiner, T = {result.steps}).")
    if verdict.reason == "no_query_log":
        return said("The query log is absent, so no worst case can be read.", f"Measured: {accuracies}.", examined)
    if verdict.reason == "worst_case_below_average":
        return said(f"Fails: the average hides weak spots: {accuracies} (tolerance {verdict.numbers['tolerance']:g}).",
                    examined)
    if verdict.reason == "foreign_space":
        return said(f"Inconclusive: {accuracies}, but the worst case is not read as the model's failure: the space is "
                    "foreign to it.", examined)
    if verdict.reason == "worst_case_within_tolerance":
        return said(f"Passes: no weak spot beyond {verdict.numbers['tolerance']:g} accuracy: {accuracies}.", examined)
    return said(f"{reason_text(verdict)} Measured: {accuracies}.", examined)
