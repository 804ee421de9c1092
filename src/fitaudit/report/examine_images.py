"""Renderer of ``fitaudit reproduce examiner-images`` (:class:`~fitaudit.experiments.examine.images.ImageExaminerReproduction`).

``markdown``: the findings (``brief``), or the findings, a table of every
examiner against the exact grid (Engstrom et al., ICML 2019) per model, the
space checks, the weakness rules of the grid and the models. The figure is
the examiner reproductions' (:mod:`fitaudit.report.examine`): the running
worst true-class probability per examiner, one panel per model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _pct(value: Any) -> str:
    return "-" if value is None else f"{value:.0%}"


def images_reproduction_markdown(result: Any, *, brief: bool = False, **_: Any) -> str:
    """Findings, the examiners against the grid, space checks, rules, models."""
    findings = [f"- {line}" for line in result.findings]
    if brief:
        return "\n".join([f"{result.experiment} ({result.mode} mode):", *findings])
    table = [
        "| model, examiner | images | queries per image | worst-case accuracy | rotation only | grid's broken images found | beyond the grid | mean worst true-class prob. |",
        "|---|---|---|---|---|---|---|---|",
    ]
    checks, rules = [], []
    for r in result.rows:
        per_image = r["model_queries"] // max(r["n_instances"], 1)
        found = f"{r['found']} of {r['grid_failures']} ({_pct(r['found_fraction'])})" if "found" in r else "-"
        table.append(
            f"| {r['label']} | {r['n_instances']} | {per_image} | {_pct(r['worst_case_accuracy'])} | "
            f"{_pct(r.get('rotation_worst_case_accuracy'))} | {found} | {r.get('beyond_grid', '-')} | {r['worst_found']:.3f} |"
        )
        check = r.get("space_check")
        if check:
            checks.append(
                f"- {r['label'].rsplit(' ', 1)[0]}: accuracy {check['clean_accuracy']:.1%} on {check['reference']}, "
                f"{check['random_accuracy']:.1%} under random factors ({check['n_random']:,} queries); "
                + ("foreign space (drop above " if check["foreign"] else "not foreign (drop at most ")
                + (f"{check['factor_threshold']:.0%} under each factor alone)." if "factors_alone" in check
                   else f"{check['threshold']:.0%}).")
            )
        if "rules" in r:
            rules.append(f"- {r['label']}: " + (" | ".join(r["rules"][:2]) or "no rule"))
    models = [
        f"- {name}: {m['description']}; training accuracy {m['train_accuracy']:.1%}"
        for name, m in result.models.items()
    ]
    return "\n".join([
        f"## {result.experiment} ({result.mode} mode)", "", *findings, "",
        "Worst-case accuracy: the fraction of the examined images (correctly classified untouched) that no "
        "query of the examiner broke. Rotation only: the grid's 31 rotations without translation.", "",
        *table, "", "Space checks (untouched vs random factors, same images):", *checks, "",
        "Weakness rules of the grid's queries (top two):", *rules, "", "Models:", *models,
    ])


#: this module's renderers by (result type, format), gathered by :func:`fitaudit.report.renderer_table`
RENDERERS: dict[tuple[str, str], Callable[..., Any]] = {
    ("ImageExaminerReproduction", "markdown"): images_reproduction_markdown,
}
