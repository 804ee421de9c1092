"""The baseline check's decision: is the model better than the majority class, and not worse than the reference?

Two comparisons on the same scored rows, each an exact McNemar test
(:mod:`fitaudit.baseline.result`) at half the family level, so that a model
as accurate as the reference fails through them at most at the level; each
reads its interval at 1 - level, which excludes 0 exactly when its test
rejects:

``fail``, ``worse_than_reference``
    the model is shown less accurate than the reference learner (the
    interval on model minus reference lies below 0);
``fail``, ``no_better_than_majority``
    the model is not shown more accurate than always predicting the
    majority class, and the rows rule out its being :data:`MATERIAL_GAP`
    or more above it (the interval on model minus majority ends below
    :data:`MATERIAL_GAP`; below 0 it is shown worse);
``inconclusive``, ``cannot_tell_from_majority``
    not shown better than the majority class, but the rows cannot rule out
    a gain of :data:`MATERIAL_GAP` (too few rows to tell);
``inconclusive``, ``cannot_rule_out_loss``
    shown better than the majority class, not shown worse than the
    reference, but the rows cannot rule out a loss of :data:`MATERIAL_GAP`
    or more to it;
``pass``, ``beats_baselines``
    shown better than the majority class, and shown less than
    :data:`MATERIAL_GAP` below the reference at most; without a reference
    (no training data, or inputs it cannot take), ``pass`` rests on the
    majority class alone and ``missing`` says what was not compared
    (``pass``, ``beats_majority``).

An accuracy at or below chance (Cohen's kappa <= 0: no better than
predictions unrelated to the labels, :attr:`~fitaudit.baseline.result.BaselineResult.at_chance`)
is decided by the same rules (it is never shown better than the majority
class counted on the scored labels, and a reference learner usually beats
it); the verdict's numbers carry ``at_chance`` and the words the likely
causes (:attr:`~fitaudit.baseline.result.BaselineResult.chance_hint`).

Every verdict carries the smallest loss to the reference the test detects
with 80% power on these rows (:func:`fitaudit.baseline.result.detectable_difference`).
"""

from __future__ import annotations

from typing import Any

from fitaudit.verdict import Verdict

#: the accuracy difference that matters: a model passes only when the rows show it at most this far below the
#: reference learner, and fails against the majority class only when they show it less than this far above it.
#: Three points of accuracy: about the share of wrong labels Northcutt, Athalye and Mueller (2021) found in
#: common test sets (3.3% on average), below which a ranking of two models can flip when those labels are
#: corrected; the same size as :data:`fitaudit.pmv.decision.MATERIAL_GAP` (PMV's cross-validated comparison).
MATERIAL_GAP = 0.03


def baseline_verdict(result: Any, **_: Any) -> Verdict:
    """The decision on a :class:`~fitaudit.baseline.result.BaselineResult` (see the module docstring)."""
    majority_low, majority_high = result.majority_interval()
    numbers: dict[str, Any] = {
        "n": result.n, "accuracy": result.accuracy, "level": result.level, "material_gap": MATERIAL_GAP,
        "majority_label": result.majority_label, "majority_source": result.majority_source,
        "majority_accuracy": result.majority_accuracy, "majority_gain_low": majority_low,
        "majority_gain_high": majority_high, "pvalue_above_majority": result.pvalue_above_majority(),
        "reference": result.reference, "missing": result.missing, "chance": result.chance,
        "at_chance": result.at_chance}
    if result.reference is not None:
        low, high = result.reference_interval()
        numbers.update(reference_accuracy=result.reference_accuracy, difference=result.accuracy -
                       result.reference_accuracy, difference_low=low, difference_high=high,
                       pvalue_below_reference=result.pvalue_below_reference(),
                       discordant=result.wins_vs_reference + result.losses_vs_reference,
                       detectable_loss=result.detectable_loss())
        if high < 0:
            return Verdict("fail", "worse_than_reference", numbers)
    shown_better = majority_low > 0
    if not shown_better and majority_high < MATERIAL_GAP:
        return Verdict("fail", "no_better_than_majority", numbers)
    if not shown_better:
        return Verdict("inconclusive", "cannot_tell_from_majority", numbers)
    if result.reference is None:
        return Verdict("pass", "beats_majority", numbers)
    if not numbers["difference_low"] > -MATERIAL_GAP:
        return Verdict("inconclusive", "cannot_rule_out_loss", numbers)
    return Verdict("pass", "beats_baselines", numbers)
