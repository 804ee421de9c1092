"""The decision on label problems (:func:`fitaudit.labels.find_label_problems`).

``fail``
    correcting the flagged rows (their labels replaced by the model's
    suggestion) moves the accuracy above the exact interval of the measured
    accuracy, and so does correcting only the disagreements the model's own
    probabilities do not explain (the confident disagreements beyond the 95%
    quantile of their number were the labels drawn from the probabilities:
    :attr:`~fitaudit.labels.LabelResult.unexplained`): the labels, not the
    sampling of the rows, decide the score;
``inconclusive``
    the flagged rows would move the accuracy out of its interval, but the
    disagreements the model's own uncertainty does not explain (classes that
    overlap) would not: label errors cannot be told from it;
``pass``
    the corrected accuracy stays inside that interval (the flagged rows are
    listed all the same); the verdict states how many corrected rows it
    would take to leave the interval (:func:`rows_to_leave_interval`).

The uncertainty test trusts the model's probabilities: an overconfident
model (see the calibration check) makes honest labels look wrong.
"""

from __future__ import annotations

import math
from typing import Any

from fitaudit.verdict import Verdict


def rows_to_leave_interval(result: Any) -> int | None:
    """The fewest corrected rows (labels the model is right to doubt) that move the accuracy above its
    interval; ``None`` when none can (the interval reaches 1)."""
    needed = math.floor(result.high * result.n - result.correct + 1e-9) + 1
    return needed if result.high < 1.0 and result.correct + needed <= result.n else None


def label_verdict(result: Any, **_: Any) -> Verdict:
    """The decision on a :class:`~fitaudit.labels.LabelResult` (see the module docstring)."""
    numbers: dict[str, Any] = {
        "n": result.n, "accuracy": result.accuracy, "low": result.low, "high": result.high,
        "confidence_level": result.confidence_level, "flagged": result.n_flagged,
        "by_confident_learning": result.by_confident_learning, "by_conflict": result.by_conflict,
        "corrected_accuracy": result.corrected_accuracy, "rows_to_leave": rows_to_leave_interval(result),
        "confident_errors": result.confident_errors, "expected_confident_errors": result.expected_confident_errors,
        "explained_confident_errors": result.explained_confident_errors, "unexplained": result.unexplained,
        "uncertainty_pvalue": result.uncertainty_pvalue}
    if result.corrected_accuracy > result.high and (result.correct + result.unexplained) / result.n > result.high:
        return Verdict("fail", "labels_move_accuracy", numbers)
    if result.corrected_accuracy > result.high:
        return Verdict("inconclusive", "explained_by_model_uncertainty", numbers)
    return Verdict("pass", "labels_within_interval", numbers)


def label_contradiction(result: Any) -> str | None:
    """Where a saved label result disagrees with its counts: the accuracies and the flagged rows."""
    from fitaudit.results import first_mismatch, mismatch

    return first_mismatch(
        mismatch("accuracy", result.accuracy, result.correct / result.n if result.n else 0.0),
        mismatch("corrected_accuracy", result.corrected_accuracy,
                 result.corrected_correct / result.n if result.n else 0.0),
        None if result.correct <= result.corrected_correct <= result.correct + result.n_flagged else
        f"`corrected_correct` is {result.corrected_correct}, but correcting {result.n_flagged} flagged rows of "
        f"{result.correct} correct gives between {result.correct} and {result.correct + result.n_flagged}",
        None if result.explained_confident_errors >= 0 else
        f"`explained_confident_errors` is {result.explained_confident_errors}, below 0",
        None if len(result.rows) <= result.n_flagged else
        f"`rows` lists {len(result.rows)} rows but only {result.n_flagged} are flagged")
