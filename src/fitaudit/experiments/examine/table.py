"""Table 2 of Shu et al. (AAAI 2020) on the Shapes world (``fitaudit reproduce examiner-table``).

Both reference model families (``shapes_alexnet`` and ``shapes_resnet``, the
counterparts of the paper's AlexNet and ResNet34) are examined by the RL,
BO and random examiners over the paper's nine factors, and the average
true-class probability is reported at T = 0, 100, 300, 500 (T = 0: the
first query, before any update; one run of 500 steps gives every T, since
an examiner's state at step T does not depend on the budget). Instances:
per class the validation object the model scores highest (as the paper
chooses them), and a random sample of validation objects. The RL examiner
draws 32 vectors per step and updates once (``update="batch"``: T steps
cost 32 T model queries; the query counts are reported next to T).

The full mode took 61 minutes with ``--n-jobs 4`` on a shared 2-core machine
(load average ~24); its outputs are in ``benchmarks/results/examiner_table/``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from fitaudit.experiments.examine._common import (
    EXAMINED_FACTORS,
    PAPER_STEPS,
    PAPER_TABLE,
    fixed_factors,
)
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
    "quick": {"steps": 6, "report": [0, 2, 4, 6], "n_per_class": 2, "n_random": 3},
    "full": {"steps": 500, "report": PAPER_STEPS, "n_per_class": 8, "n_random": 6},
}
EXAMINERS = ("rl", "bo", "random")


def reproduce_examiner_table(**options: Unpack[ExaminerOptions]) -> ExaminerReproduction:
    """Run the experiment (module docstring) with the :class:`ExaminerOptions`; examinations and models are checkpointed."""
    run = ExaminerRun(SIZES, **options)
    mode, size, random_state = run.mode, run.settings, run.random_state
    rows, curves, summaries = [], {}, {}
    for family, architecture in (("alexnet", "shapes_alexnet"), ("resnet", "shapes_resnet")):
        settings = model_settings(architecture, quick=mode == "quick")
        model, generator, summaries[family], chosen = run.scenario(settings, n_random=size["n_random"])
        instances = sorted(set(chosen["best_per_class"]) | set(chosen["random"]))
        for examiner in EXAMINERS:
            result = run.examine(model, generator, instances, examiner)
            for subset, members in chosen.items():
                keep = np.flatnonzero(np.isin(result.instances, members))
                label = f"{family} {examiner} ({subset.replace('_', ' ')})"
                paper = PAPER_TABLE[family].get(examiner) if subset == "best_per_class" else None
                rows.append(row(result, label, size["report"], keep, model=family, subset=subset,
                                paper=dict(zip(PAPER_STEPS, paper)) if paper else None))
                curves[label] = mean_curve(result, keep)
    findings = _findings(rows, size["steps"])
    return ExaminerReproduction(
        experiment="examiner-table", mode=mode, rows=rows, curves=curves, models=summaries,
        settings={**size, "examined_factors": list(EXAMINED_FACTORS), "fixed_factors": fixed_factors(random_state),
                  "rl": {"update": "batch", "batch_size": 32}},
        findings=findings, seconds=run.seconds(),
    )


def _findings(rows: list[dict[str, Any]], steps: int) -> list[str]:
    out = []
    for r in rows:
        if r["subset"] != "best_per_class":
            continue
        ours = " / ".join(f"{v:.1%}" for v in r["at_steps"].values())
        paper = (
            "paper at T=" + "/".join(map(str, r["paper"])) + ": " + " / ".join(f"{v:.2f}%" for v in r["paper"].values())
            if r["paper"] else "not in the paper"
        )
        out.append(
            f"{r['label']}: T={'/'.join(map(str, r['at_steps']))}: {ours} ({paper}); worst found "
            f"{r['worst_found']:.1%}; {r['model_queries']:,} model queries for T={steps}."
        )
    return out
