"""The planted weakness (``fitaudit reproduce examiner-planted``).

Shu et al. (AAAI 2020, Sec. 5) train a classifier with camera elevation
limited to [-30, 30] degrees and check that the examiner finds the top and
bottom views. Here a ``shapes_alexnet`` is trained on renders with
``camera_elevation`` restricted to [-30, 30] (:meth:`FactorSpace.restrict`)
and examined over the full range by RL, BO and random search; reported per
examiner: the fraction of its failing queries with |elevation| > 30 (two
thirds of the range: 67% if failures ignored elevation), the same fraction
among failing uniform random queries (the reference sample), the mean
|elevation| of the worst inputs found, and whether the weakness rules name
``camera_elevation``. The model trained on
the full range is examined the same way as a control. A t-SNE of uniform
random vs RL-found inputs (pixels) of the planted model, failures marked,
comes with the result (as in the paper's figures). The full mode took
21 minutes with ``--n-jobs 4`` on a shared 2-core machine; outputs in
``benchmarks/results/examiner_planted/``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from fitaudit.examine.embedding import embed_queries
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
    "quick": {"steps": 5, "report": [0, 5], "n_per_class": 2, "n_random": 4, "n_reference": 16, "tsne": 10},
    "full": {"steps": 200, "report": [0, 100, 200], "n_per_class": 8, "n_random": 6, "n_reference": 100, "tsne": 200},
}
LIMIT = 30.0


def elevation_fractions(result: Any) -> dict[str, Any]:
    """Where the failures of an examination lie in camera elevation."""
    q, r = result.queries, result.reference_queries
    wrong = q["predicted"] != q["label"]
    ref_wrong = r["predicted"] != r["label"]
    outside = np.abs(q["camera_elevation"]) > LIMIT
    ref_outside = np.abs(r["camera_elevation"]) > LIMIT
    rules = result.weakness.rules if result.weakness is not None else []
    names = result.factor_names
    column = names.index("camera_elevation")
    return {
        "failing_queries": int(wrong.sum()),
        "failing_outside_fraction": float(outside[wrong].mean()) if wrong.any() else None,
        "reference_failing_outside_fraction": float(ref_outside[ref_wrong].mean()) if ref_wrong.any() else None,
        "reference_failure_rate_outside": float(ref_wrong[ref_outside].mean()) if ref_outside.any() else None,
        "reference_failure_rate_inside": float(ref_wrong[~ref_outside].mean()) if (~ref_outside).any() else None,
        "worst_inputs_mean_abs_elevation": float(np.abs(result.extreme_factors[:, column]).mean()),
        "rules_name_elevation": any(c[0] == "camera_elevation" for rule in rules for c in rule["conditions"]),
        "rules": [rule["text"] for rule in rules],
    }


def reproduce_examiner_planted(**options: Unpack[ExaminerOptions]) -> ExaminerReproduction:
    """Run the experiment (module docstring) with the :class:`ExaminerOptions`; examinations and models are checkpointed."""
    run = ExaminerRun(SIZES, **options)
    mode, size, random_state = run.mode, run.settings, run.random_state
    rows, curves, summaries = [], {}, {}
    embedding = None
    for name, limit in (("planted", LIMIT), ("control", None)):
        settings = model_settings("shapes_alexnet", quick=mode == "quick", elevation_limit=limit)
        model, generator, summaries[name], chosen = run.scenario(settings, n_random=size["n_random"])
        instances = sorted(set(chosen["best_per_class"]) | set(chosen["random"]))
        for examiner in ("rl", "bo", "random"):
            result = run.examine(model, generator, instances, examiner, n_reference=size["n_reference"], weakness=True)
            label = f"{name} {examiner}"
            rows.append(row(result, label, size["report"], model=name, **elevation_fractions(result)))
            curves[label] = mean_curve(result)
            if name == "planted" and examiner == "rl":
                embedding = embed_queries(result, generator, n_per_source=size["tsne"], random_state=random_state)
    return ExaminerReproduction(
        experiment="examiner-planted", mode=mode, rows=rows, curves=curves, models=summaries,
        settings={**size, "elevation_limit": LIMIT, "examined_factors": list(EXAMINED_FACTORS),
                  "fixed_factors": fixed_factors(random_state)},
        findings=_findings(rows), seconds=run.seconds(), embedding=embedding,
    )


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _findings(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    for r in rows:
        out.append(
            f"{r['label']}: {_pct(r['failing_outside_fraction'])} of its {r['failing_queries']:,} failing queries "
            f"have |elevation| > {LIMIT:g} (uniform random queries: {_pct(r['reference_failing_outside_fraction'])} "
            f"of failures; random failure rate outside {_pct(r['reference_failure_rate_outside'])} vs inside "
            f"{_pct(r['reference_failure_rate_inside'])}); worst inputs at mean |elevation| "
            f"{r['worst_inputs_mean_abs_elevation']:.0f} deg; rules name elevation: "
            f"{'yes' if r['rules_name_elevation'] else 'no'}."
        )
    return out
