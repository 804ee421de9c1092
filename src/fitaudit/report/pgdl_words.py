"""The words of the generalization measures (Jiang et al. 2020): measurements, the best measure and its score first.

Registered in :data:`fitaudit.report.verdicts.WORDS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fitaudit.report.numbers import fixed
from fitaudit.report.sentences import said
from fitaudit.verdict import Verdict


def _measure_text(row: Mapping[str, Any]) -> str:
    return f"{row['measure']} (score {fixed(row['final_score'], 2)}, Kendall tau {fixed(row['kendall'])})"




def say_leaderboard(board: Any, verdict: Verdict, **_: Any) -> str:
    """Which measures predict the generalization gap (Jiang et al. 2020): a measurement, the first measure and
    its score in the headline.

    The score is the competition's (100 x the official conditional mutual
    information, minimum over pairs of hyperparameters).
    """
    where = f"{len(board.tasks)} task{'s' if len(board.tasks) > 1 else ''}"
    scored = [row for row in board.rows if row["final_score"] is not None]
    if not scored:
        return f"No measure could be scored by the official metric on {where}."
    last = f"Last: {_measure_text(scored[-1])}." if len(scored) > 1 else ""
    return said(f"On {where}, {_measure_text(scored[0])} ranks first by the competition's score of {len(board.rows)} "
                "measures at predicting the generalization gap.", last,
                "Scores are 100 x the official conditional mutual information of the PGDL competition.")




def say_task_scores(scores: Any, verdict: Verdict, **_: Any) -> str:
    """Measures scored on one task (a measurement): the best by the competition's score, its score in the headline."""
    ranked = [s for s in scores.scores if s.official_score is not None]
    if not ranked:
        return f"On {scores.task}, no measure could be scored by the official metric (see the notes)."
    best = max(ranked, key=lambda s: s.official_score)
    return said(f"On {scores.task}, {best.measure} predicts the generalization gap best by the competition's score: "
                f"{100 * best.official_score:.2f}.",
                f"The score is 100 x the official conditional MI, over {scores.n_models} models with hyperparameters "
                f"{', '.join(scores.hparams)}; Kendall tau {fixed(best.kendall)}.")




def say_measure_score(score: Any, verdict: Verdict, **_: Any) -> str:
    """One measure on one task (a measurement): the official score in the headline, the other metrics and its time."""
    if verdict.reason == "not_ranked":
        return said(f"{score.measure} could not be ranked on {score.task}.", f"Why: {score.note}")
    official = None if score.official_score is None else 100 * score.official_score
    return said(f"{score.measure} on {score.task}: official score {fixed(official, 2)} (100 x CMI).",
                f"Kendall tau {fixed(score.kendall)}, Psi {fixed(score.psi)}, general CMI {fixed(score.general_cmi)}; "
                f"{score.total_seconds:.1f} s over {len(score.seconds)} models"
                + (" (over the time budget)." if score.over_budget else "."))
