"""Renderers of perturbed model validation's results (Zhang et al. 2019).

``"markdown"`` and ``"html"``: a sentence reading |k_S| and the numbers
behind it (for a comparison, a table of every learner with the selected one
marked); ``"figure"``: training accuracy against the label-noise rate with
the fitted line acc = k_S r + b. :func:`plot_pmv` and :func:`plot_comparison`
draw on a given matplotlib Axes.

Reading |k_S| (:func:`fitaudit.report.pmv_words.say_pmv`, the one reading):
a learner that fits the signal and not the noise loses the flipped labels
one for one (accuracy 1 - r, |k_S| near 1); one that memorises them keeps
accuracy near 1 (|k_S| near 0: overfitting); one that cannot fit the data
has low accuracy already at r = 0 (underfitting).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from fitaudit.report.figures import new_figure
from fitaudit.report.html import md_cell
from fitaudit.report.overfit import Rows, html_block, markdown_block
from fitaudit.report.verdicts import read, said_lines


def _name(result: Any) -> str:
    return str(result.estimator).split("(")[0]


def pmv_reading(result: Any, name: str | None = None, *, lines: bool = False) -> str:
    """``"name: reading"``: the reading of a PMV score (:func:`fitaudit.report.pmv_words.say_pmv`) after the
    learner's name (default: its class); ``lines``: the headline on the first line, the details on the next."""
    reading = read(result)
    return f"{name or _name(result)}: " + ("\n".join(said_lines(reading)) if lines else reading.sentence)


def _pmv_rows(result: Any) -> Rows:
    rates = np.asarray(result.rates, dtype=float)
    mean = np.asarray(result.mean_accuracy, dtype=float)
    rows = [
        ("|k_S|", f"{result.statistic:.4f}"),
        (f"criterion {result.criterion}", f"{result.score:.4f} +- {result.score_std:.4f}"),
        ("slope k_S, intercept b", f"{result.slope:.4f}, {result.intercept:.4f}"),
        ("|k_S| of the majority-class learner", f"{result.baseline_statistic:.4f}"),
        (f"risk bound (delta = {result.delta:g})", f"{result.bound:.4f}"),
        ("examples m, repeats", f"{result.n_train}, {result.n_repeats}"),
    ]
    rows += [(f"training accuracy at r = {r:g}", f"{a:.4f}") for r, a in zip(rates, mean)]
    rows.append(("learner", str(result.estimator)))
    return rows


def pmv_markdown(result: Any) -> str:
    """The reading of |k_S| and the numbers behind it."""
    return markdown_block(pmv_reading(result), _pmv_rows(result))


def pmv_html(result: Any) -> str:
    """HTML form of :func:`pmv_markdown`."""
    return html_block(pmv_reading(result), _pmv_rows(result))


def plot_pmv(result: Any, ax: Any = None, *, label: str | None = None) -> Any:
    """Training accuracy (mean +- std over repeats) against r, with the fitted line; returns the Axes."""
    if ax is None:
        _, ax = new_figure(figsize=(5, 3.5))
    rates = np.asarray(result.rates, dtype=float)
    name = label or f"{_name(result)} (|k_S| {result.statistic:.3f})"
    bars = ax.errorbar(
        rates, np.asarray(result.mean_accuracy, dtype=float), yerr=np.asarray(result.std_accuracy, dtype=float),
        marker="o", capsize=3, label=name,
    )
    ends = np.array([rates[0], rates[-1]])
    ax.plot(ends, result.intercept + result.slope * ends, linestyle="--", color=bars[0].get_color())
    baseline = np.asarray(result.baseline_accuracy, dtype=float)
    if not any(line.get_label().startswith(_BASELINE) for line in ax.get_lines()):  # once per Axes
        ax.plot(rates, baseline, linestyle=":", color="grey",
                label=f"{_BASELINE} (|k_S| {result.baseline_statistic:.3f})")
    ax.set_ylim(0, 1.02)  # a fixed axis: a flat memoriser's curve (0.995-0.999) must not look like a fall
    ax.set_xlabel("label noise rate r")
    ax.set_ylabel("training accuracy on S_r")
    ax.legend(fontsize="small")
    return ax


#: the legend of the majority-class learner's curve
_BASELINE = "majority-class learner"


def pmv_figure(result: Any) -> Any:
    """Accuracy against noise rate with the fitted line."""
    ax = plot_pmv(result)
    ax.figure.tight_layout()
    return ax.figure


def _comparison_verdict(comparison: Any) -> str:
    return read(comparison).sentence


def comparison_table(comparison: Any) -> str:
    """Markdown table: name, score, slope, accuracy at r = 0 and at the largest rate, bound, and with the
    cross-validation check each learner's 5-fold accuracy (cross-validation's choice marked)."""
    cv = getattr(comparison, "cv_accuracy", None)
    lines = [
        "| estimator | score | slope | acc r=0 | acc r=max | bound |" + (" 5-fold CV accuracy |" if cv is not None else ""),
        "|---|---|---|---|---|---|" + ("---|" if cv is not None else ""),
    ]
    first = comparison.results[comparison.names[0]]
    baseline = np.asarray(first.baseline_accuracy, dtype=float)  # the same perturbed sets for every learner
    for i, name in enumerate(comparison.names):
        r = comparison.results[name]
        mean = np.asarray(r.mean_accuracy, dtype=float)
        mark = " **(selected)**" if name == comparison.best else ""
        cv_cell = "" if cv is None else f" {cv[i]:.4f}{' (CV choice)' if name == comparison.cv_best else ''} |"
        lines.append(
            f"| {md_cell(name)}{mark} | {r.score:.4f} | {r.slope:.4f} | {mean[0]:.4f} | {mean[-1]:.4f} | {r.bound:.4f} |"
            + cv_cell
        )
    lines.append(f"| *majority-class learner* | {first.baseline_statistic:.4f} | | {baseline[0]:.4f} | "
                 f"{baseline[-1]:.4f} | |" + (" |" if cv is not None else ""))
    return "\n".join(lines)


def comparison_markdown(comparison: Any) -> str:
    """The selection, then :func:`comparison_table` and one reading per learner."""
    readings = [f"- {pmv_reading(comparison.results[name], name)}" for name in comparison.names]
    return "\n".join([_comparison_verdict(comparison), "", comparison_table(comparison), "", *readings])


def comparison_html(comparison: Any) -> str:
    """The selection and one row per learner, as HTML."""
    cv = getattr(comparison, "cv_accuracy", None)
    rows = [
        (
            name + (" (selected)" if name == comparison.best else ""),
            f"score {comparison.results[name].score:.4f}, slope {comparison.results[name].slope:.4f}, "
            f"bound {comparison.results[name].bound:.4f}" + ("" if cv is None else f", 5-fold CV accuracy {cv[i]:.4f}"),
        )
        for i, name in enumerate(comparison.names)
    ]
    return html_block(_comparison_verdict(comparison), rows)


def plot_comparison(comparison: Any, ax: Any = None) -> Any:
    """Accuracy-versus-rate curves of every candidate on one Axes; returns the Axes."""
    if ax is None:
        _, ax = new_figure(figsize=(6, 4))
    for name in comparison.names:
        r = comparison.results[name]
        plot_pmv(r, ax, label=f"{name} ({r.score:.3f})")
    return ax


def comparison_figure(comparison: Any) -> Any:
    """Every candidate's accuracy-versus-rate curve and fitted line."""
    ax = plot_comparison(comparison)
    ax.figure.tight_layout()
    return ax.figure


#: this module's renderers by (result type, format), gathered by :func:`fitaudit.report.renderer_table`
RENDERERS: dict[tuple[str, str], Callable[..., Any]] = {
    ("PMVResult", "markdown"): pmv_markdown,
    ("PMVResult", "html"): pmv_html,
    ("PMVResult", "figure"): pmv_figure,
    ("PMVComparison", "markdown"): comparison_markdown,
    ("PMVComparison", "html"): comparison_html,
    ("PMVComparison", "figure"): comparison_figure,
}
