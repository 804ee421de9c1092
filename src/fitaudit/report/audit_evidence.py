"""The evidence of an audit's page, instrument by instrument: tables, plots, pictures and warnings.

The overfitting tests side by side (training vs test data, or several
models on one test set) with their interval plot; PMV's curves and table;
the examiner's space check, worst inputs, weakness rules, histograms,
sensitivity profile and curves; the first questions' tables and pairs; the
parts of other result types through the renderers registered for them
(``"html"`` fragments and ``"figure"``, drawn by the ``render`` handed in).
Every part's badge is :func:`part_pill` (:mod:`fitaudit.report.badges`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit.examine.weakness import MIN_REFERENCE_SUPPORT
from fitaudit.report.badges import answer_mark, known_answer
from fitaudit.report.calibration import CAPTION as RELIABILITY_CAPTION
from fitaudit.report.html import (
    esc,
    figure_html,
    figure_uri,
    grid,
    image_uri,
    key_values,
    number,
    pill,
    pvalue,
)
from fitaudit.report.overfit_words import g3_line

#: the caption of a result type's figure in the evidence (by default, its part's title)
FIGURE_CAPTIONS = {"CalibrationResult": RELIABILITY_CAPTION}

def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _interval(value: Any) -> tuple[float, float]:
    return float(_get(value, "low")), float(_get(value, "high"))


def _group(part: Any) -> str:
    return str(part.settings.get("group", part.instrument))


# --------------------------------------------------------------------------- badges


def part_pill(part: Any, *, answer: bool = False) -> str:
    """The badge of a part: its status (:data:`fitaudit.report.badges.BADGES`); with ``answer`` (the part's card),
    beside it, where the right answer is known (the demo), whether the part found it (tables show the status only,
    so that they keep their width)."""
    mark = answer_mark(known_answer(part)) if answer else None
    beside = f"<span class='answer {mark[0]}'>{esc(mark[1])}</span>" if mark is not None else ""
    return pill(part.status) + beside


# --------------------------------------------------------------------------- overfitting test


def overfit_table(parts: Sequence[Any]) -> str:
    """The overfitting tests of one group side by side."""
    rows = []
    for part in parts:
        r = part.result
        interval = part.numbers.get(next((k for k in part.numbers if k.endswith("interval of T")), ""), None)
        verdict = part_pill(part) if part.status != "info" else (
            pill("info", "dependent" if r.reject else "no dependence found"))
        rows.append([
            esc(part.settings.get("label", part.title)) + f"<br><span class='note'>m = {esc(number(r.m))}</span>",
            verdict, f"<strong>{esc(pvalue(r.pvalue))}</strong>", esc(number(r.risk_plain)),
            esc(number(r.risk_adversarial)), esc(number(interval)), esc(pvalue(_get(r.ci, "pvalue"))),
        ])
    return grid(["data / model", "verdict", "p pairwise", "error rate R_S", "adv. risk R_g", "interval of T",
                 "p interval test"], rows)


def overfit_figure(parts: Sequence[Any]) -> str:
    """Error rate and adversarial risk with their confidence intervals, one row per test."""
    from fitaudit.report.figures import new_figure

    fig, ax = new_figure(figsize=(7.2, 0.75 + 0.62 * len(parts)))
    for row, part in enumerate(parts):
        r = part.result
        for offset, (name, centre, ci, colour) in enumerate((
            ("error rate R_S", r.risk_plain, _get(r.ci, "ci_plain"), "#0969da"),
            ("adversarial risk R_g", r.risk_adversarial, _get(r.ci, "ci_adversarial"), "#cf222e"),
        )):
            low, high = _interval(ci)
            y = row + (offset - 0.5) * 0.3
            ax.errorbar([centre], [y], xerr=[[centre - low], [high - centre]], fmt="o", color=colour, capsize=4,
                        label=name if row == 0 else None)
    ax.set_yticks(range(len(parts)), [str(p.settings.get("label", p.title)) for p in parts])
    ax.invert_yaxis()
    ax.set_xlabel("risk (with its Bernstein confidence interval)")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="lower right", fontsize="small", frameon=False, bbox_to_anchor=(1, 1), ncol=2)
    return figure_html(figure_uri(fig), "Disjoint intervals (or a small pairwise p-value) mean the model depends on "
                       "that sample: its error rate there is optimistic.")


def overfit_evidence(parts: Sequence[Any], render: Callable[..., Any]) -> str:
    """Side-by-side table, interval plot, AEGs and warnings of one group of overfitting tests."""
    ran = [p for p in parts if p.result is not None and type(p.result).__name__ == "OverfitTestResult"]
    others = [p for p in parts if p not in ran and p.result is not None]
    html = ""
    if ran:
        html += overfit_table(ran) + overfit_figure(ran)
        aegs = sorted({str(p.result.aeg) for p in ran})
        html += f"<p class='note'>AEG: {esc('; '.join(aegs))}. Level delta = {esc(number(ran[0].result.delta))}.</p>"
        html += "".join(f"<p class='note'>{esc(p.settings.get('label', p.title))}: "
                        f"{esc(g3_line(p.result.g3, 'docs/overfit.md'))}</p>" for p in ran if p.result.g3 is not None)
        # where (G3) was checked, its numbers above replace the general note on (G3)
        warnings = sorted({w for p in ran for w in (p.result.warnings or []) if p.result.g3 is None or "(G3)" not in w})
        html += "".join(f"<div class='warn'>{esc(w)}</div>" for w in warnings)
    for part in others:
        html += generic_evidence(part, render)
    return html


# --------------------------------------------------------------------------- PMV


def pmv_figure(parts: Sequence[Any]) -> str:
    """Training accuracy against the label-noise rate, with each fitted line."""
    from fitaudit.report.figures import new_figure

    fig, ax = new_figure(figsize=(7.2, 4.0))
    for part in parts:
        r = part.result
        rates, mean, std = (np.asarray(v, dtype=float) for v in (r.rates, r.mean_accuracy, r.std_accuracy))
        label = f"{part.settings.get('label', r.estimator.split('(')[0])}: |k_S| = {r.statistic:.2f}"
        bars = ax.errorbar(rates, mean, yerr=std, marker="o", markersize=4, capsize=2, label=label)
        ends = np.array([rates[0], rates[-1]])
        ax.plot(ends, r.intercept + r.slope * ends, linestyle="--", linewidth=1, color=bars[0].get_color())
    ax.set_xlabel("fraction r of labels flipped")
    ax.set_ylabel("training accuracy on the flipped labels")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", frameon=False)
    return figure_html(figure_uri(fig), "A learner that fits the signal loses accuracy as labels are flipped "
                       "(steep line, large |k_S|); one that memorises the noise stays flat near 1.")


def pmv_evidence(parts: Sequence[Any]) -> str:
    """PMV curves and table of one group of learners."""
    ran = [p for p in parts if p.result is not None]
    if not ran:
        return ""
    rows = []
    for part in sorted(ran, key=lambda p: -p.result.statistic):
        r = part.result
        mean = np.asarray(r.mean_accuracy, dtype=float)
        rows.append([esc(part.settings.get("label", r.estimator)), part_pill(part),
                     f"<strong>{esc(number(r.statistic))}</strong>", esc(number(r.slope)), esc(number(mean[0])),
                     esc(number(mean[-1])), esc(number(r.bound)) + (" (vacuous)" if r.bound > 1 else ""),
                     esc(number(r.n_train))])
    table = grid(["learner", "verdict", "|k_S|", "slope k_S", "accuracy r=0", "accuracy r=max", "risk bound", "m"],
                 rows)
    estimators = "".join(f"<li><code>{esc(p.result.estimator)}</code></li>" for p in ran)
    return pmv_figure(ran) + table + f"<details><summary>learners</summary><ul>{estimators}</ul></details>"


# --------------------------------------------------------------------------- adversarial examiner


def worst_case_caption(case: dict[str, Any]) -> str:
    """``"cube: p(true) 0.12; elevation 61, distance 3"`` (the camera's factors, where the generator has them)."""
    factors = case.get("factors") or {}
    detail = ", ".join(f"{name.split('_')[-1]} {factors[name]:.0f}"
                       for name in ("camera_elevation", "camera_distance") if name in factors)
    return f"{case['label']}: p(true) {float(case['p_true']):.2f}" + (f"; {detail}" if detail else "")


def gallery(images: Sequence[dict[str, Any]]) -> str:
    """Small pictures with captions (the worst cases the examiner found, drawn from their pixels)."""
    cells = []
    for case in images:
        pixels = np.asarray(case.get("pixels", []), dtype=np.float64)
        if pixels.ndim != 3:
            continue
        caption = esc(case["caption"] if "caption" in case else worst_case_caption(case))
        cells.append(f"<figure><img src='{image_uri(pixels / 255.0)}' alt='{caption}'><figcaption>{caption}</figcaption></figure>")
    return f"<div class='gallery'>{''.join(cells)}</div>" if cells else ""


def weakness_figure(weakness: Any, factor: str) -> str:
    """Failure rate per bin of ``factor``: uniform random factors against everything examined."""
    from fitaudit.report.figures import new_figure

    histogram = _get(weakness, "histograms", {}).get(factor)
    if not histogram:
        return ""
    edges = np.asarray(histogram["edges"], dtype=float)
    reference = np.asarray(histogram["reference"], dtype=float)
    reference_failing = np.asarray(histogram["reference_failing"], dtype=float)
    failing = np.asarray(histogram["failing"], dtype=float)
    centres, widths = (edges[:-1] + edges[1:]) / 2, np.diff(edges)
    fig, (left, right) = new_figure(1, 2, figsize=(8.4, 3.0))
    rate = np.divide(reference_failing, reference, out=np.full_like(reference, np.nan), where=reference > 0)
    left.bar(centres, rate, width=widths * 0.9, color="#cf222e", alpha=0.8)
    left.set_xlabel(factor)
    left.set_ylabel("failure rate, random factors")
    left.set_ylim(0, 1)
    right.bar(centres, failing / max(failing.sum(), 1), width=widths * 0.9, color="#0969da", alpha=0.8)
    right.set_xlabel(factor)
    right.set_ylabel("share of all failures")
    for ax in (left, right):
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return figure_html(figure_uri(fig), f"Where the failures are along {factor}, the factor that separates them best.")


def changed_factors(factors: dict[str, float], space: dict[str, Any]) -> str:
    """``"rotation 23, contrast 0.61"``: the factors of a query that differ from their defaults (3 significant digits)."""
    changed = [f"{name} {value:.3g}" for name, value in factors.items()
               if name not in space or not np.isclose(value, float(space[name].get("default", np.nan)))]
    return ", ".join(changed) or "every factor at its default"


def worst_pairs(images: Sequence[dict[str, Any]], space: dict[str, Any]) -> str:
    """The worst inputs found next to their originals, with the true-class probability and the factors changed."""
    cells = []
    for case in images:
        pixels = np.asarray(case.get("pixels", []), dtype=np.float64)
        before = np.asarray(case.get("original", []), dtype=np.float64)
        if pixels.ndim != 3 or before.ndim != 3:
            continue
        caption = f"{case['label']}: p(true) {float(case['p_true']):.2f}; {changed_factors(case['factors'], space)}"
        cells.append(
            "<figure><div style='display:flex;gap:3px'>"
            f"<img src='{image_uri(before / 255.0)}' alt='untouched' style='width:50%'>"
            f"<img src='{image_uri(pixels / 255.0)}' alt='{esc(caption)}' style='width:50%'></div>"
            f"<figcaption>{esc(caption)}</figcaption></figure>")
    if not cells:
        return ""
    return ("<div class='gallery' style='grid-template-columns:repeat(auto-fill,minmax(190px,1fr))'>"
            f"{''.join(cells)}</div>")


def space_check_html(check: dict[str, Any] | None) -> str:
    """The space check's numbers, and the warning when the space is foreign to the model.

    The warning's words are :func:`fitaudit.report.examine_words.foreign_space_text`
    (the verdict's own sentence).
    """
    from types import SimpleNamespace

    from fitaudit.report.examine_words import foreign_space_text

    if not check:
        return ""
    if check.get("foreign"):
        warning = foreign_space_text(SimpleNamespace(space_check=check)).strip()
        counts = (f"The drop under all the factors at once is {check['drop']:.2f} ({int(check['n_clean']):,} inputs "
                  f"in the reference, {int(check['n_random']):,} random queries).")
        return f"<div class='warn'><strong>Foreign space.</strong> {esc(warning)} {esc(counts)}</div>"
    numbers = (f"accuracy {check['clean_accuracy']:.2f} on {check['reference']} against "
               f"{check['random_accuracy']:.2f} under uniform random factors ({int(check['n_random']):,} queries): "
               f"a drop of {check['drop']:.2f}")
    alone = [row for row in check.get("factors_alone") or [] if not row["left_out"]]
    if alone:  # the per-factor screen decides (fitaudit.examine.scenarios.is_foreign)
        worst = max(alone, key=lambda row: row["drop"])
        return (f"<p class='note'>Space check: {esc(numbers)}. Each factor alone, far from its default, costs at most "
                f"{worst['drop']:.2f} ({esc(worst['factor'])}: {worst['far_accuracy']:.2f} against "
                f"{worst['clean_accuracy']:.2f} untouched on {worst['images']} images), within the "
                f"{check['factor_threshold']:.2f} allowed before a factor counts as foreign to the model.</p>")
    return (f"<p class='note'>Space check: {esc(numbers)}, within the {check['threshold']:.2f} allowed before the "
            "space counts as foreign to the model.</p>")


def sensitivity_html(profile: dict[str, Any] | None) -> str:
    """The sensitivity profile: the figure (:func:`fitaudit.report.examine.sensitivity_figure`) and its table."""
    from fitaudit.report.examine import sensitivity_figure

    if not profile or not profile.get("factors"):
        return ""
    figure = figure_html(figure_uri(sensitivity_figure(profile)),
                         "Accuracy of the uniform random reference queries in equal bins of each factor (the other "
                         "factors random), the factors with the largest spread first: the average case around the "
                         "examiner's worst case.")
    rows = [[esc(name), esc(f"[{f['edges'][0]:.3g}, {f['edges'][-1]:.3g}]"),
             esc(" ".join("-" if a is None else f"{a:.0%}" for a in f["accuracy"])),
             esc(" ".join(str(n) for n in f["count"])), esc("-" if f["spread"] is None else f"{f['spread']:.0%}")]
            for name, f in profile["factors"].items()]
    table = grid(["factor", "range", "accuracy per bin, low to high", "queries per bin", "spread"], rows)
    return ("<h4>Sensitivity profile (accuracy against each factor, random factors)</h4>" + figure
            + f"<details><summary>every factor's bins</summary>{table}</details>")


def examine_evidence(parts: Sequence[Any], render: Callable[..., Any]) -> str:
    """Space check, worst cases found (next to their originals), rules, sensitivity profile, histogram, curve, t-SNE."""
    html = ""
    for part in parts:
        r = part.result
        if r is None or not hasattr(r, "weakness"):
            html += generic_evidence(part, render)
            continue
        html += space_check_html(_get(r, "space_check"))
        if part.images and part.settings.get("generator") == "image transforms" and all(
                "original" in case for case in part.images):
            html += ("<h4>Worst cases found (lowest true-class probability first): the untouched image left, the "
                     "input found right, with the factors changed</h4>"
                     + worst_pairs(part.images, _get(r, "factor_space", {}) or {}))
        elif part.images:
            html += "<h4>Worst cases found (lowest true-class probability first)</h4>" + gallery(part.images)
        weakness = r.weakness
        if weakness is not None:
            rules = _get(weakness, "rules", [])
            if rules:
                html += ("<h4>Weakness rules (candidate regions of the factor space where the model fails; "
                         f"confirmed ones first: at least {MIN_REFERENCE_SUPPORT} random queries in the region and a "
                         "lift interval above 1)</h4><ul>" + "".join(
                             f"<li><code>{esc(rule['text'])}</code>{'' if rule.get('confirmed') else ' (not confirmed)'}</li>"
                             for rule in rules) + "</ul>")
        html += sensitivity_html(_get(r, "sensitivity"))
        if weakness is not None:
            concentration = _get(weakness, "concentration", {})
            if concentration:
                top = next(iter(concentration))
                html += weakness_figure(weakness, top)
                html += "<details><summary>every factor, ranked by how much it separates failures</summary>" + grid(
                    ["factor", "total-variation distance (failures vs random)"],
                    [[esc(k), esc(number(v, 2))] for k, v in concentration.items()]) + "</details>"
        html += examine_curve(r)
        html += evidence_figures(part, render)
    return html


def evidence_figures(part: Any, render: Callable[..., Any]) -> str:
    """The part's further evidence (e.g. the t-SNE picture of the examiner's queries), drawn by ``render`` as figures."""
    captions = {"QueryEmbedding": "t-SNE of the inputs (pixels): uniform random factors against the examiner's late "
                                  "queries, failures marked. Examiner-found inputs gathering where random ones "
                                  "rarely go show where the model's weakness lies (Shu et al. 2020, Sec. 5)."}
    html = ""
    for item in part.evidence:
        try:
            drawn = render(item, "figure")
        except InputError:
            continue
        html += figure_html(figure_uri(drawn), captions.get(type(item).__name__, type(item).__name__))
    return html


def examine_curve(result: Any) -> str:
    """Mean true-class probability over the examination steps (current step and worst so far)."""
    from fitaudit.report.figures import new_figure

    curves = _get(result, "curves", {}).get("true_class_probability", {})
    if not curves:
        return ""
    fig, ax = new_figure(figsize=(7.2, 3.0))
    for kind, label in (("current", "at step t"), ("running", "worst so far")):
        values = np.asarray(curves.get(kind, []), dtype=float)
        if values.size:
            ax.plot(np.arange(1, values.shape[-1] + 1), values.reshape(-1, values.shape[-1]).mean(axis=0), label=label)
    ax.set_xlabel("examination step t")
    ax.set_ylabel("mean true-class probability")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", frameon=False)
    return figure_html(figure_uri(fig), "Mean true-class probability of the examiner's queries at each step, and "
                       "the lowest found so far (lower = harsher).")


# --------------------------------------------------------------------------- other instruments


def generic_evidence(part: Any, render: Callable[..., Any]) -> str:
    """Evidence through the renderers of the part's result type (``render``: :func:`fitaudit.report.render`)."""
    html = ""
    for fmt in ("html", "figure"):
        try:
            drawn = render(part.result, fmt)
        except InputError:
            continue
        caption = FIGURE_CAPTIONS.get(type(part.result).__name__, part.title)
        html += f"<div class='fragment scroll'>{drawn}</div>" if fmt == "html" else figure_html(figure_uri(drawn), caption)
    if not html:
        html = key_values(part.numbers.items())
    return html


def first_evidence(parts: Sequence[Any], render: Callable[..., Any]) -> str:
    """The evidence of the audit's first parts: each result's table, and the leakage pairs as pictures."""
    from fitaudit.report.first_questions import pair_caption

    html = ""
    for part in parts:  # a result without a renderer of its own (a new check's) shows its numbers
        html += f"<h4>{esc(part.title)}</h4>" + generic_evidence(part, render)
        if part.images:
            html += "<p class='note'>Nearest pairs, scored image left, its training twin right.</p>"
            html += gallery([{**pair, "caption": pair_caption(pair)} for pair in part.images])
    return html


def instrument_evidence(instrument: str, parts: Sequence[Any], render: Callable[..., Any]) -> str:
    """The evidence section of one instrument, group by group (results of their own drawn by ``render``)."""
    groups: dict[str, list[Any]] = {}
    for part in parts:
        if part.status != "skipped":
            groups.setdefault(_group(part), []).append(part)
    blocks = []
    for name, members in groups.items():
        if instrument == "overfit":
            body = overfit_evidence(members, render)
        elif instrument == "pmv":
            body = pmv_evidence(members)
        elif instrument == "examine":
            body = examine_evidence(members, render)
        elif instrument == "first":
            body = first_evidence(members, render)
        else:
            body = "".join(generic_evidence(p, render) for p in members)
        heading = f"<h3>{esc(members[0].settings.get('group_title', name))}</h3>" if len(groups) > 1 else ""
        blocks.append(f"<div class='panel'>{heading}{body}</div>")
    return "".join(blocks)
