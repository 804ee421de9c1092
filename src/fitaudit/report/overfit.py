"""Renderers of the overfitting test's results (Werpachowski et al. 2019).

``"markdown"`` and ``"html"``: the reading (:mod:`fitaudit.report.verdicts`) and the numbers behind it;
``"figure"``: the error rate R_S and the adversarial risk R_g with their confidence
intervals (one model), the per-run p-values against the runs' error rates
(N-model test). :func:`pvalue_curves_figure` draws the curves of
:func:`fitaudit.overfit.translation_curves.pvalue_curves` (the Fig. 5
analogue).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from fitaudit.report.figures import new_figure
from fitaudit.report.html import md_cell
from fitaudit.report.verdicts import read

Rows = list[tuple[str, str]]


def _number(value: Any) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "n/a"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return f"{float(value):.4g}"


def _interval(interval: Any) -> tuple[float, float]:
    """(low, high) of a ConfidenceInterval or its dict form."""
    if isinstance(interval, Mapping):
        return float(interval["low"]), float(interval["high"])
    return float(interval.low), float(interval.high)


def markdown_block(verdict: str, rows: Rows, notes: Sequence[str] = ()) -> str:
    """A verdict paragraph, a two-column table and notes, as markdown."""
    lines = [verdict, "", "| quantity | value |", "|---|---|"]
    lines += [f"| {md_cell(name)} | {md_cell(value)} |" for name, value in rows]
    lines += [f"\n> {note}" for note in notes]
    return "\n".join(lines)


def html_block(verdict: str, rows: Rows, notes: Sequence[str] = ()) -> str:
    """The same as :func:`markdown_block`, as an HTML fragment."""
    body = "".join(
        f"<tr><th style='text-align:left'>{html.escape(name)}</th><td>{html.escape(value)}</td></tr>"
        for name, value in rows
    )
    extra = "".join(f"<p class='note'>{html.escape(note)}</p>" for note in notes)
    return f"<p>{html.escape(verdict)}</p><table>{body}</table>{extra}"


def _overfit_rows(result: Any) -> Rows:
    return [
        ("examples m", _number(result.m)),
        ("error rate R_S", _number(result.risk_plain)),
        ("adversarial risk R_g", _number(result.risk_adversarial)),
        ("T = R_g - R_S", _number(result.statistic)),
        ("p-value (pairwise test)", _number(result.pvalue)),
        ("p-value (CI test, level 2 delta)", _number(result.ci.pvalue)),
        ("range U", _number(result.U)),
        ("successful adversarial examples", _number(result.n_success)),
        ("model evaluations", _number(result.evaluations)),
        ("AEG", str(result.aeg)),
    ]


def overfit_markdown(result: Any) -> str:
    """Verdict, the two risks, both p-values, the AEG and its warnings."""
    return markdown_block(read(result).sentence, _overfit_rows(result), result.warnings)


def overfit_html(result: Any) -> str:
    """HTML form of :func:`overfit_markdown`."""
    return html_block(read(result).sentence, _overfit_rows(result), result.warnings)


def _nmodel_rows(result: Any) -> Rows:
    rows = [
        ("models N", _number(result.n_models)),
        ("examples m", _number(result.m)),
        ("mean error rate R_S", _number(result.pairwise.risk_plain)),
        ("mean adversarial risk R_g", _number(result.pairwise.risk_adversarial)),
        ("Tbar", _number(result.statistic)),
        ("p-value p_N", _number(result.pvalue)),
        ("range U", _number(result.U)),
    ]
    for j, run in enumerate(result.per_model):
        rows.append(
            (
                f"run {j + 1}" + (f" (seed {run['seed']})" if run.get("seed") is not None else ""),
                f"R_S {_number(run['risk_plain'])}, p_j {_number(run['pvalue'])}",
            )
        )
    return rows


def nmodel_markdown(result: Any) -> str:
    """Verdict of the N-model test, then each run's error rate and p-value."""
    return markdown_block(read(result).sentence, _nmodel_rows(result), result.warnings)


def nmodel_html(result: Any) -> str:
    """HTML form of :func:`nmodel_markdown`."""
    return html_block(read(result).sentence, _nmodel_rows(result), result.warnings)


def _pairwise_rows(result: Any) -> Rows:
    return [
        ("examples m", _number(result.m)),
        ("R_S", _number(result.risk_plain)),
        ("R_g", _number(result.risk_adversarial)),
        ("T = R_g - R_S", _number(result.statistic)),
        ("bound B(m, s2_T, delta, U)", _number(result.bound)),
        ("p-value", _number(result.pvalue)),
        ("range U", _number(result.U)),
    ]


def pairwise_markdown(result: Any) -> str:
    """Verdict of the pairwise test (Test B) and its numbers."""
    return markdown_block(read(result).sentence, _pairwise_rows(result))


def pairwise_html(result: Any) -> str:
    """HTML form of :func:`pairwise_markdown`."""
    return html_block(read(result).sentence, _pairwise_rows(result))


def _ci_rows(result: Any) -> Rows:
    plain, adversarial = _interval(result.ci_plain), _interval(result.ci_adversarial)
    return [
        ("examples m", _number(result.m)),
        ("R_S and its interval", f"{_number(result.risk_plain)} [{_number(plain[0])}, {_number(plain[1])}]"),
        ("R_g and its interval", f"{_number(result.risk_adversarial)} [{_number(adversarial[0])}, {_number(adversarial[1])}]"),
        ("confidence level", _number(result.confidence_level)),
        ("p-value", _number(result.pvalue)),
    ]


def ci_markdown(result: Any) -> str:
    """Verdict of the confidence-interval test (Test A) and both intervals."""
    return markdown_block(read(result).sentence, _ci_rows(result))


def ci_html(result: Any) -> str:
    """HTML form of :func:`ci_markdown`."""
    return html_block(read(result).sentence, _ci_rows(result))


def _risk_bars(ax: Any, risks: Sequence[float], intervals: Sequence[tuple[float, float]], title: str) -> None:
    labels = ["R_S (plain)", "R_g (adversarial)"]
    low = [r - i[0] for r, i in zip(risks, intervals)]
    high = [i[1] - r for r, i in zip(risks, intervals)]
    ax.bar(labels, risks, yerr=[low, high], capsize=6, color=["C0", "C3"], alpha=0.8)
    ax.set_ylim(0.0, max(1e-3, max(i[1] for i in intervals)) * 1.15)
    ax.set_ylabel("error rate R_S, adversarial risk R_g")  # R_S is a risk estimate only where the test has power
    ax.set_title(title, fontsize=10)


def _pairwise_figure(pairwise: Any, title: str) -> Any:
    fig, ax = new_figure(figsize=(4.5, 3.5))
    intervals = [pairwise.risk_plain_interval(), pairwise.risk_adversarial_interval()]
    _risk_bars(ax, [pairwise.risk_plain, pairwise.risk_adversarial], [_interval(i) for i in intervals], title)
    fig.tight_layout()
    return fig


def overfit_figure(result: Any) -> Any:
    """R_S and R_g with their (1 - delta) intervals; the p-value in the title."""
    return _pairwise_figure(result.pairwise, f"pairwise test: p = {_number(result.pvalue)}, m = {result.m}")


def pairwise_figure(result: Any) -> Any:
    """R_S and R_g with their (1 - delta) intervals."""
    return _pairwise_figure(result, f"pairwise test: p = {_number(result.pvalue)}, m = {result.m}")


def ci_figure(result: Any) -> Any:
    """The two intervals of the CI test."""
    fig, ax = new_figure(figsize=(4.5, 3.5))
    _risk_bars(
        ax, [result.risk_plain, result.risk_adversarial],
        [_interval(result.ci_plain), _interval(result.ci_adversarial)],
        f"CI test: p = {_number(result.pvalue)}, m = {result.m}",
    )
    fig.tight_layout()
    return fig


def nmodel_figure(result: Any) -> Any:
    """Each run's p-value p_j against its error rate, with p_N and delta as lines."""
    fig, ax = new_figure(figsize=(5, 3.5))
    errors = [run["risk_plain"] for run in result.per_model]
    pvalues = [max(float(run["pvalue"]), 1e-300) for run in result.per_model]
    ax.scatter(errors, pvalues, color="C0", label="single runs p_j")
    ax.axhline(max(float(result.pvalue), 1e-300), color="C3", label=f"N-model p_N = {_number(result.pvalue)}")
    ax.axhline(float(result.delta), color="grey", linestyle=":", label=f"delta = {_number(result.delta)}")
    ax.set_yscale("log")
    ax.set_xlabel("error rate R_S(f_j) on the sample")
    ax.set_ylabel("p-value")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def pvalue_curves_figure(curves: Mapping[str, Any], *, title: str) -> Any:
    """Mean p-value against sample size, one panel per data set (the Fig. 5 analogue).

    Parameters
    ----------
    curves : dict
        The output of :func:`fitaudit.overfit.translation_curves.pvalue_curves`
        (``sizes`` and ``curves[dataset][variant]``).
    title : str
        Prefix of every panel's title.
    """
    names = list(curves["curves"])
    fig, axes = new_figure(1, len(names), figsize=(5 * len(names), 4), squeeze=False)
    for ax, name in zip(axes[0], names):
        for k, (variant, entry) in enumerate(curves["curves"][name].items()):
            ax.plot(curves["sizes"], entry["pairwise"], "-o", color=f"C{k}", label=f"{variant} pairwise")
            ax.plot(curves["sizes"], entry["ci"], ":", color=f"C{k}", label=f"{variant} CI")
        ax.set_xscale("log")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("sample size m")
        ax.set_ylabel("mean p-value")
        ax.set_title(f"{title}: {name}")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


#: this module's renderers by (result type, format), gathered by :func:`fitaudit.report.renderer_table`
RENDERERS: dict[tuple[str, str], Callable[..., Any]] = {
    ("OverfitTestResult", "markdown"): overfit_markdown,
    ("OverfitTestResult", "html"): overfit_html,
    ("NModelTestResult", "markdown"): nmodel_markdown,
    ("NModelTestResult", "html"): nmodel_html,
    ("PairwiseTestResult", "markdown"): pairwise_markdown,
    ("PairwiseTestResult", "html"): pairwise_html,
    ("CITestResult", "markdown"): ci_markdown,
    ("CITestResult", "html"): ci_html,
    ("OverfitTestResult", "figure"): overfit_figure,
    ("PairwiseTestResult", "figure"): pairwise_figure,
    ("CITestResult", "figure"): ci_figure,
    ("NModelTestResult", "figure"): nmodel_figure,
}
