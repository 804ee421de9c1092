"""Fewer renders per object make weaker models (``fitaudit reproduce examiner-renders``).

Shu et al. (AAAI 2020, Sec. 5) train classifiers with m = 1, 2, 5, 10
renders per object and find them weaker under examination the smaller m
(average true-class probability at T = 200, paper: RL 63.81 / 57.43 /
35.05 / 18.92 %, BO 49.79 / 43.06 / 22.19 / 10.92 % for m = 10 / 5 / 2 / 1).
Here ``shapes_alexnet`` models are trained on the same objects with m = 1,
2, 5, 10 renders each (epochs scaled by 10 / m, so every model takes as
many gradient steps) and examined by RL and BO on each model's
best-scored validation object per class. Epochs are capped at 100, so the
m = 1 model takes half as many gradient steps (it fits its 360 training
renders perfectly). Outputs of the full mode: ``benchmarks/results/examiner_renders/``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fitaudit.experiments.examine._common import EXAMINED_FACTORS, PAPER_RENDERS, fixed_factors
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
    "quick": {"steps": 4, "report": [0, 4], "n_per_class": 2, "renders": [1, 10]},
    "full": {"steps": 200, "report": [0, 100, 200], "n_per_class": 8, "renders": [10, 5, 2, 1]},
}


def reproduce_examiner_renders(**options: Unpack[ExaminerOptions]) -> ExaminerReproduction:
    """Run the experiment (module docstring) with the :class:`ExaminerOptions`; examinations and models are checkpointed."""
    run = ExaminerRun(SIZES, **options)
    mode, size, random_state = run.mode, run.settings, run.random_state
    rows, curves, summaries = [], {}, {}
    for m in size["renders"]:
        settings = model_settings("shapes_alexnet", quick=mode == "quick", renders_per_object=m)
        model, generator, summaries[f"m={m}"], chosen = run.scenario(settings)
        for examiner in ("rl", "bo"):
            result = run.examine(model, generator, chosen["best_per_class"], examiner)
            label = f"m={m} {examiner}"
            rows.append(row(result, label, size["report"], renders_per_object=m,
                            validation_accuracy=summaries[f"m={m}"]["validation_accuracy"],
                            paper={200: PAPER_RENDERS[examiner][m]} if m in PAPER_RENDERS[examiner] else None))
            curves[label] = mean_curve(result)
    return ExaminerReproduction(
        experiment="examiner-renders", mode=mode, rows=rows, curves=curves, models=summaries,
        settings={**size, "examined_factors": list(EXAMINED_FACTORS), "fixed_factors": fixed_factors(random_state)},
        findings=_findings(rows, size["steps"]), seconds=run.seconds(),
    )


def _findings(rows: list[dict[str, Any]], steps: int) -> list[str]:
    out = []
    for examiner in ("rl", "bo"):
        mine = [r for r in rows if r["examiner"] == examiner]
        ours = ", ".join(f"m={r['renders_per_object']}: {r['at_steps'][steps]:.1%}" for r in mine)
        paper = ", ".join(f"m={r['renders_per_object']}: {r['paper'][200]:.2f}%" for r in mine if r["paper"])
        accuracy = ", ".join(f"m={r['renders_per_object']}: {r['validation_accuracy']:.1%}" for r in mine)
        out.append(f"{examiner} at T={steps}: {ours} (paper at T=200: {paper or 'n/a'}); validation accuracy {accuracy}.")
    return out
