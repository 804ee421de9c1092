"""Factor order of the RL examiner, and model strength (``fitaudit reproduce examiner-variants``).

Shu et al. (AAAI 2020, Sec. 5) check that the order in which the RL
examiner's LSTM samples the factors does not matter, and examine "model
strength" by minimising the loss instead of maximising it (the examiner
then looks for the inputs the model is surest about). Here, on the
``shapes_alexnet`` reference model: RL with the paper's factor order and
with the reverse order (mean true-class probability at step T and the
difference between the two), and RL and BO in strength mode next to weakness mode.
The full mode took 31 minutes with ``--n-jobs 2`` on a shared 2-core machine;
outputs in ``benchmarks/results/examiner_variants/``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fitaudit.experiments.examine._common import EXAMINED_FACTORS, fixed_factors
from fitaudit.experiments.examine._models import model_settings
from fitaudit.experiments.examine._run import (
    ExaminerOptions,
    ExaminerReproduction,
    ExaminerRun,
    mean_curve,
    row,
)

if TYPE_CHECKING:
    from typing import Unpack

SIZES: dict[str, dict[str, Any]] = {
    "quick": {"steps": 5, "report": [0, 5], "n_per_class": 2},
    "full": {"steps": 200, "report": [0, 100, 200], "n_per_class": 8},
}


def reproduce_examiner_variants(**options: Unpack[ExaminerOptions]) -> ExaminerReproduction:
    """Run the experiment (module docstring) with the :class:`ExaminerOptions`; examinations and models are checkpointed."""
    run = ExaminerRun(SIZES, **options)
    mode, size, random_state = run.mode, run.settings, run.random_state
    settings = model_settings("shapes_alexnet", quick=mode == "quick")
    model, generator, summary, chosen = run.scenario(settings)
    runs = [
        ("rl, paper's order", "rl", {"factor_order": list(EXAMINED_FACTORS)}, True),
        ("rl, reversed order", "rl", {"factor_order": list(EXAMINED_FACTORS)[::-1]}, True),
        ("rl, strength", "rl", None, False),
        ("bo, weakness", "bo", None, True),
        ("bo, strength", "bo", None, False),
    ]
    rows, curves = [], {}
    for label, examiner, settings_of_examiner, maximize in runs:
        result = run.examine(model, generator, chosen["best_per_class"], examiner, options=settings_of_examiner,
                             maximize=maximize)
        rows.append(row(result, label, size["report"], maximize=maximize))
        curves[label] = mean_curve(result)
    return ExaminerReproduction(
        experiment="examiner-variants", mode=mode, rows=rows, curves=curves, models={"alexnet": summary},
        settings={**size, "examined_factors": list(EXAMINED_FACTORS), "fixed_factors": fixed_factors(random_state)},
        findings=_findings(rows, size["steps"]), seconds=run.seconds(),
    )


def _findings(rows: list[dict[str, Any]], steps: int) -> list[str]:
    by = {r["label"]: r["at_steps"][steps] for r in rows}
    first, second = by["rl, paper's order"], by["rl, reversed order"]
    return [
        f"RL factor order: {first:.1%} (paper's order) vs {second:.1%} (reversed) mean true-class probability at "
        f"T={steps}, a difference of {abs(first - second):.1%} points.",
        f"Strength mode at T={steps}: RL {by['rl, strength']:.1%}, BO {by['bo, strength']:.1%} vs weakness mode "
        f"RL {first:.1%}, BO {by['bo, weakness']:.1%} (higher = the examiner found inputs the model is surer of).",
    ]
