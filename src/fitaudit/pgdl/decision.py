"""The generalization measures' verdicts (Jiang et al. 2020): measurements, never a pass or a fail.

Which measure predicts the generalization gap best, by the competition's
score (100 x the official conditional mutual information, minimum over
pairs of hyperparameters), is a ranking, not a judgement of the audited
model: every verdict here is ``info``.
"""

from __future__ import annotations

from typing import Any

from fitaudit.verdict import Verdict


def leaderboard_verdict(board: Any, **_: Any) -> Verdict:
    """The measure ranked first over the tasks (``no_measure_scored`` when none could be scored)."""
    scored = [row for row in board.rows if row["final_score"] is not None]
    numbers: dict[str, Any] = {"tasks": len(board.tasks), "measures": len(board.rows)}
    if not scored:
        return Verdict("info", "no_measure_scored", numbers)
    return Verdict("info", "measures_ranked", {**numbers, "best": scored[0]["measure"],
                                               "best_score": scored[0]["final_score"]})


def task_scores_verdict(scores: Any, **_: Any) -> Verdict:
    """The measure that predicts the gap best on one task, by the competition's score."""
    ranked = [s for s in scores.scores if s.official_score is not None]
    numbers: dict[str, Any] = {"models": int(scores.n_models), "measures": len(scores.scores)}
    if not ranked:
        return Verdict("info", "no_measure_scored", numbers)
    best = max(ranked, key=lambda s: s.official_score)
    return Verdict("info", "measures_ranked", {**numbers, "best": best.measure,
                                               "best_score": 100 * best.official_score})


def measure_score_verdict(score: Any, **_: Any) -> Verdict:
    """One measure on one task: scored, or why it could not be ranked."""
    if score.official_score is None and score.kendall is None:
        return Verdict("info", "not_ranked")
    official = None if score.official_score is None else 100 * score.official_score
    return Verdict("info", "scored", {"official_score": official, "kendall": score.kendall,
                                      "over_budget": bool(score.over_budget)})
