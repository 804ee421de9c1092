"""Renderers of the adversarial examiner's results (Shu et al., AAAI 2020; docs/examiner.md).

* :class:`~fitaudit.examine.result.ExaminationResult`: ``markdown`` and
  ``html`` summaries (average vs worst-case true-class probability, the
  top weakness rules); ``figure`` with ``kind="curves"`` (true-class
  probability over t, the step's and the running worst, overall and per
  class, as the paper's curves), ``kind="histograms"`` (per-factor
  distributions of failing vs random queries) or ``kind="contact_sheet"``
  (the worst input found for each instance, grouped by class; needs
  ``generator=`` to re-render them, images are never stored) or
  ``kind="pairs"`` (the worst inputs next to their originals, every factor
  at its default, with the factor values changed); the markdown adds the
  sensitivity profile (accuracy per factor bin among random queries) when
  the result has one;
* :class:`~fitaudit.examine.weakness.WeaknessReport`: ``markdown`` and the
  histograms ``figure``;
* :class:`~fitaudit.examine.embedding.QueryEmbedding`: the t-SNE ``figure``
  of random vs examiner-found inputs, failures marked.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit.report.figures import new_figure
from fitaudit.report.html import md_cell
from fitaudit.report.verdicts import read, said_lines


def _direction(result: Any) -> str:
    return "worst" if result.maximize else "best"


def summary_lines(result: Any, n_rules: int = 3, *, split: bool = True) -> list[str]:
    """The reading of an examination (:func:`fitaudit.report.examine_words.say_examination`; ``split``: its headline
    on a line of its own, the details on the next), then its numbers."""
    where = _direction(result)
    lines = [
        *(said_lines(read(result)) if split else [read(result).sentence]),
        f"{result.examiner} examiner, {len(result.instances)} instance(s), T = {result.steps} steps "
        f"({result.n_model_queries:,} model queries), loss {result.loss}, "
        f"{'looking for weakness (maximise)' if result.maximize else 'looking for strength (minimise)'}.",
        f"Average true-class probability at step T: {result.mean_final_true_class_probability:.1%} "
        f"(the paper's E_examiner; lower = harsher); {where} case found per instance, averaged: "
        f"{result.mean_extreme_true_class_probability:.1%}.",
    ]
    if result.maximize:
        failing = float(np.mean(result.min_true_class_probability < 0.5))
        lines.append(
            f"The examiner drove {failing:.0%} of the instances below 50% true-class probability; "
            f"{result.failure_rate:.1%} of its queries were misclassified"
            + (f" vs {result.reference_failure_rate:.1%} of uniform random queries." if np.isfinite(result.reference_failure_rate) else ".")
        )
    report = result.weakness
    if report is not None and report.headline is not None and n_rules > 0:
        confirmed = [r for r in report.rules if r.get("confirmed")]
        lines.append("Where it fails: " + " | ".join(r["text"] for r in confirmed[:n_rules]) + ".")
    elif report is not None:
        lines.append(read(report).sentence)
    return lines


def examination_markdown(result: Any, **_: Any) -> str:
    """Summary, a per-class table and the weakness rules."""
    out = ["## Adversarial examination", "", *summary_lines(result, n_rules=0, split=False), ""]
    out += ["| class | instances | true-class prob. at T | " + _direction(result) + " found |", "|---|---|---|---|"]
    names = result.class_names or [str(c) for c in range(int(result.labels.max()) + 1)]
    for c in np.unique(result.labels):
        rows = result.labels == c
        out.append(
            f"| {md_cell(names[c])} | {int(rows.sum())} | {result.final_true_class_probability[rows].mean():.1%} | "
            f"{result.extreme_true_class_probability[rows].mean():.1%} |"
        )
    if result.weakness is not None:
        out += ["", weakness_markdown(result.weakness)]
    if getattr(result, "sensitivity", None):
        out += ["", *sensitivity_markdown(result.sensitivity)]
    return "\n".join(out)


def sensitivity_markdown(profile: dict[str, Any]) -> list[str]:
    """The sensitivity profile: accuracy per equal bin of each factor among uniform random queries."""
    out = ["### Sensitivity profile", "",
           f"Accuracy of {profile['n_queries']:,} uniform random queries (overall {profile['accuracy']:.1%}) in "
           f"{profile['n_bins']} equal bins of each factor, the others random; factors by spread (highest minus "
           "lowest bin accuracy):", "", "| factor | range | accuracy per bin, low to high | spread |", "|---|---|---|---|"]
    for name, f in profile["factors"].items():
        cells = " ".join("-" if a is None else f"{a:.0%}" for a in f["accuracy"])
        spread = "-" if f["spread"] is None else f"{f['spread']:.0%}"
        out.append(f"| {md_cell(name)} | [{f['edges'][0]:.3g}, {f['edges'][-1]:.3g}] | {cells} | {spread} |")
    return out


def examination_html(result: Any, **_: Any) -> str:
    """The summary as an HTML fragment."""
    items = "".join(f"<li>{html.escape(line)}</li>" for line in summary_lines(result, split=False))
    return f"<section><h2>Adversarial examination</h2><ul>{items}</ul></section>"


def weakness_markdown(report: Any, **_: Any) -> str:
    """Rules with support and precision, and the factors that concentrate failures."""
    out = ["### Weakness", "", read(report).sentence, ""]
    ref = report.failure_rate_reference
    out.append(
        f"{report.n_examined:,} examiner queries ({report.failure_rate_examined:.1%} wrong)"
        + (f" and {report.n_reference:,} uniform random queries ({ref:.1%} wrong)." if ref is not None else ".")
    )
    if report.rules:
        out += ["", "| rule | support | precision | random queries in region (wrong) | lift (interval) | confirmed |",
                "|---|---|---|---|---|---|"]
        for rule in report.rules:
            cond = rule["text"].split(":")[0]
            random_part = (
                f"{rule['reference_support']} ({rule['reference_precision']:.0%})"
                if rule.get("reference_precision") is not None else "-"
            )
            lift = f"{rule['lift']:.1f}" if rule.get("lift") is not None else "-"
            if rule.get("lift_low") is not None:
                lift += f" ({rule['lift_low']:.2g}-{rule['lift_high']:.2g})"
            out.append(f"| {md_cell(cond)} | {rule['support']} ({rule['support_fraction']:.0%}) | {rule['precision']:.0%} | "
                       f"{random_part} | {lift} | {'yes' if rule.get('confirmed') else 'no'} |")
    else:
        out.append("No factor range concentrates the failures.")
    if report.concentration:
        top = ", ".join(f"{k} {v:.2f}" for k, v in list(report.concentration.items())[:4])
        out += ["", f"Factors whose failing queries differ most from random ones (total variation): {top}."]
    return "\n".join(out)


def _curves_figure(result: Any, **_: Any) -> Any:
    fig, axes = new_figure(1, 2, figsize=(11, 4))
    t = np.arange(1, result.steps + 1)
    worst = "worst" if result.maximize else "best"
    axes[0].plot(t, result.curve("true_class_probability", "current"), label="step t (mean over instances)")
    axes[0].plot(t, result.curve("true_class_probability", "running"), label=f"{worst} so far", linestyle="--")
    axes[0].set(xlabel="step t", ylabel="true-class probability", ylim=(-0.02, 1.02),
                title=f"{result.examiner}: {result.n_model_queries:,} queries for T={result.steps}")
    axes[0].legend()
    for name, curve in result.curve("true_class_probability", "current", by="class").items():
        axes[1].plot(t, curve, label=name)
    axes[1].set(xlabel="step t", ylabel="true-class probability", ylim=(-0.02, 1.02), title="per class (step t)")
    axes[1].legend(fontsize=7, ncol=2)
    return fig


def _histograms_figure(report: Any, max_factors: int = 9) -> Any:
    names = list(report.concentration)[:max_factors] or list(report.histograms)[:max_factors]
    cols = min(3, len(names))
    rows = int(np.ceil(len(names) / cols))
    fig, axes = new_figure(rows, cols, figsize=(4 * cols, 2.8 * rows), squeeze=False)
    for ax, name in zip(axes.ravel(), names):
        hist = report.histograms[name]
        edges = np.asarray(hist["edges"], dtype=float)
        centres, width = (edges[:-1] + edges[1:]) / 2, np.diff(edges)
        for key, label, style in (("reference", "random queries", {"alpha": 0.4}),
                                  ("failing", "failing queries", {"alpha": 0.6})):
            counts = np.asarray(hist[key], dtype=float)
            if counts.sum():
                ax.bar(centres, counts / counts.sum(), width=width, label=label, **style)
        score = report.concentration.get(name)
        ax.set_title(f"{name}" + (f" (TV {score:.2f})" if score is not None else ""), fontsize=9)
    for ax in axes.ravel()[len(names):]:
        ax.axis("off")
    axes.ravel()[0].legend(fontsize=7)
    fig.suptitle("Where failures concentrate: share of queries per factor bin")
    fig.tight_layout()
    return fig


def _contact_sheet(result: Any, generator: Any = None, per_class: int = 6, **_: Any) -> Any:
    if generator is None:
        raise InputError("`generator` is needed to re-render the worst inputs (images are not stored).")
    images = np.asarray(result.extreme_inputs(generator))
    if images.ndim != 4 or images.shape[1] not in (1, 3):
        raise InputError(f"a contact sheet needs images (n, 1 or 3, H, W); the generator returns shape {images.shape}.")
    names = result.class_names or [str(c) for c in range(int(result.labels.max()) + 1)]
    classes = list(np.unique(result.labels))
    cols = min(per_class, max(int((result.labels == c).sum()) for c in classes))
    fig, axes = new_figure(len(classes), cols, figsize=(1.6 * cols, 1.7 * len(classes)), squeeze=False)
    for r, c in enumerate(classes):
        rows = np.flatnonzero(result.labels == c)
        rows = rows[np.argsort(result.extreme_true_class_probability[rows])][:cols]
        if not result.maximize:
            rows = rows[::-1]
        for k in range(cols):
            ax = axes[r, k]
            ax.axis("off")
            if k < len(rows):
                image = np.clip(np.moveaxis(images[rows[k]], 0, -1), 0.0, 1.0)
                ax.imshow(image.squeeze(), cmap="gray" if image.shape[-1] == 1 else None)
                ax.set_title(f"{names[c]} {result.extreme_true_class_probability[rows[k]]:.0%}", fontsize=7)
    fig.suptitle(f"{_direction(result).capitalize()} input found per instance (true-class probability)")
    return fig


def examination_figure(result: Any, kind: str = "curves", **options: Any) -> Any:
    """``kind``: ``"curves"``, ``"histograms"``, ``"sensitivity"``, ``"contact_sheet"`` or ``"pairs"`` (with ``generator=``)."""
    if kind == "curves":
        return _curves_figure(result)
    if kind == "histograms":
        if result.weakness is None:
            raise InputError("the result has no weakness report (run examine(..., weakness=True)).")
        return _histograms_figure(result.weakness)
    if kind == "contact_sheet":
        return _contact_sheet(result, **options)
    if kind == "pairs":
        return _pairs_figure(result, **options)
    if kind == "sensitivity":
        if not getattr(result, "sensitivity", None):
            raise InputError("the result has no sensitivity profile (it needs uniform random reference queries).")
        return sensitivity_figure(result.sensitivity, **options)
    raise InputError(
        f"`kind` must be 'curves', 'histograms', 'contact_sheet', 'pairs' or 'sensitivity'; got {kind!r}.")


def _bin_intervals(accuracy: np.ndarray, counts: Any) -> tuple[np.ndarray, np.ndarray]:
    """Exact (Clopper-Pearson) 95% intervals of each bin's accuracy (NaN for an empty bin)."""
    from fitaudit.stats.binomial import binomial_interval

    low, high = np.full(len(accuracy), np.nan), np.full(len(accuracy), np.nan)
    for i, (a, n) in enumerate(zip(accuracy, counts)):
        if n and np.isfinite(a):
            interval = binomial_interval(int(round(a * n)), int(n))
            low[i], high[i] = interval.low, interval.high
    return low, high


def sensitivity_figure(profile: dict[str, Any], max_factors: int = 9, **_: Any) -> Any:
    """Accuracy per bin of each factor among uniform random queries (the sensitivity profile), by spread.

    One panel per factor (the ``max_factors`` of highest spread): accuracy
    in each equal-width bin at its centre with its exact (Clopper-Pearson)
    95% interval, the overall accuracy of the random queries dashed (the
    profile of Engstrom et al., ICML 2019, Fig. 2, for every factor).
    """
    names = list(profile["factors"])[:max_factors]
    cols = min(3, max(len(names), 1))
    rows = max(1, int(np.ceil(len(names) / cols)))
    fig, axes = new_figure(rows, cols, figsize=(3.6 * cols, 2.5 * rows), squeeze=False)
    overall = profile["accuracy"]
    for ax, name in zip(axes.ravel(), names):
        factor = profile["factors"][name]
        edges = np.asarray(factor["edges"], dtype=float)
        centres = (edges[:-1] + edges[1:]) / 2
        accuracy = np.array([np.nan if a is None else a for a in factor["accuracy"]], dtype=float)
        low, high = _bin_intervals(accuracy, factor["count"])
        ax.errorbar(centres, accuracy, yerr=[accuracy - low, high - accuracy], marker="o", markersize=4, capsize=2,
                    color="#0969da")
        if overall is not None:
            ax.axhline(overall, linestyle="--", color="#59636e", linewidth=1)
        spread = "" if factor["spread"] is None else f" (spread {factor['spread']:.0%})"
        ax.set_title(name + spread, fontsize=9)
        ax.set(ylim=(-0.05, 1.05), xlim=(edges[0], edges[-1]))
        ax.grid(alpha=0.3)
    for ax in axes.ravel()[len(names):]:
        ax.axis("off")
    axes[0, 0].set_ylabel("accuracy")
    overall_text = "" if overall is None else f", overall {overall:.0%} dashed"
    fig.suptitle(f"Accuracy against each factor, {profile['n_queries']:,} uniform random queries{overall_text} "
                 "(bars: exact 95% intervals)",
                 fontsize=9)
    fig.tight_layout()
    return fig


def _changed(result: Any, row: int, defaults: np.ndarray) -> str:
    """The factors of the worst query that differ from their defaults, as ``name=value`` lines."""
    parts = [f"{name}={result.extreme_factors[row, c]:.3g}" for c, name in enumerate(result.factor_names)
             if not np.isclose(result.extreme_factors[row, c], defaults[c])]
    return "\n".join(", ".join(parts[i:i + 2]) for i in range(0, len(parts), 2)) or "(defaults)"


def _pairs_figure(result: Any, generator: Any = None, limit: int = 8, **_: Any) -> Any:
    """The worst inputs next to the originals (every factor at its default), with the factor values."""
    if generator is None:
        raise InputError("`generator` is needed to re-render the worst inputs and their originals.")
    order = np.argsort(result.extreme_true_class_probability)[:limit]
    if not result.maximize:
        order = np.argsort(-result.extreme_true_class_probability)[:limit]
    defaults = np.asarray(generator.factor_space.defaults, dtype=float)
    worst = np.asarray(result.extreme_inputs(generator))[order]
    original = np.asarray(generator.generate(result.instances[order], np.tile(defaults, (len(order), 1))))
    if worst.ndim != 4 or worst.shape[1] not in (1, 3):
        raise InputError(f"pairs need images (n, 1 or 3, H, W); the generator returns shape {worst.shape}.")
    names = result.class_names or [str(c) for c in range(int(result.labels.max()) + 1)]
    fig, axes = new_figure(2, len(order), figsize=(1.9 * len(order), 5.4), squeeze=False)
    for k, row in enumerate(order):
        for r, (image, title) in enumerate(((original[k], f"{names[result.labels[row]]}: original"),
                                             (worst[k], f"true-class p = {result.extreme_true_class_probability[row]:.0%}"))):
            ax = axes[r, k]
            ax.set(xticks=[], yticks=[])
            picture = np.clip(np.moveaxis(image, 0, -1), 0.0, 1.0)
            ax.imshow(picture.squeeze(), cmap="gray" if picture.shape[-1] == 1 else None)
            ax.set_title(title, fontsize=7)
        axes[1, k].set_xlabel(_changed(result, row, defaults), fontsize=5.5)
    fig.suptitle(f"{_direction(result).capitalize()} inputs found (bottom) below the originals (top), with the "
                 "factors changed", fontsize=9)
    fig.tight_layout()
    return fig


def weakness_figure(report: Any, **_: Any) -> Any:
    """Per-factor histograms of failing vs random queries."""
    return _histograms_figure(report)


def embedding_figure(embedding: Any, **_: Any) -> Any:
    """t-SNE scatter: random (circles) vs examiner-found (triangles) inputs, failures in red."""
    fig, ax = new_figure(figsize=(6, 5))
    _scatter(ax, embedding)
    return fig


def _scatter(ax: Any, embedding: Any) -> None:
    source = np.asarray(embedding.source)
    xy = embedding.coordinates
    for name, marker in (("random", "o"), ("examiner", "^")):
        for wrong, colour in ((False, "tab:blue"), (True, "tab:red")):
            rows = (source == name) & (embedding.failing == wrong)
            if rows.any():
                ax.scatter(xy[rows, 0], xy[rows, 1], marker=marker, c=colour, s=14, alpha=0.7,
                           label=f"{name}, {'wrong' if wrong else 'right'}")
    ax.set(title=f"t-SNE of inputs ({embedding.features})", xticks=[], yticks=[])
    ax.legend(fontsize=7)


def write_examination_figures(result: Any, generator: Any, folder: Path, *, tsne_points: int = 200) -> dict[str, Path]:
    """``summary.md`` and the pictures of an examination in ``folder`` (each written atomically).

    The curves, the per-factor histograms (with a weakness report), the
    sensitivity profile (with one), the worst inputs alone
    (``worst-inputs.png``) and next to their originals
    (``worst-vs-original.png``), and the t-SNE picture of random vs
    examiner-found inputs (``tsne.png``, :func:`fitaudit.examine.embedding.embed_queries`;
    when :func:`fitaudit.examine.embedding.can_embed`). ``generator`` re-renders the inputs (its
    ``for_display()`` view when it has one: [0, 1] pixels, not model
    inputs). Returns the paths by name.
    """
    from fitaudit.checkpoint import atomic_write_text
    from fitaudit.examine.embedding import can_embed, embed_queries
    from fitaudit.report.figures import save_figure

    shown = generator.for_display() if hasattr(generator, "for_display") else generator
    files = {"markdown": folder / "summary.md", "curves": folder / "curves.png"}
    atomic_write_text(files["markdown"], examination_markdown(result) + "\n")
    save_figure(examination_figure(result, kind="curves"), files["curves"])
    if result.weakness is not None:
        files["histograms"] = folder / "histograms.png"
        save_figure(examination_figure(result, kind="histograms"), files["histograms"])
    if getattr(result, "sensitivity", None):
        files["sensitivity"] = folder / "sensitivity.png"
        save_figure(examination_figure(result, kind="sensitivity"), files["sensitivity"])
    files["contact_sheet"] = folder / "worst-inputs.png"
    save_figure(examination_figure(result, kind="contact_sheet", generator=shown), files["contact_sheet"])
    files["pairs"] = folder / "worst-vs-original.png"
    save_figure(examination_figure(result, kind="pairs", generator=shown), files["pairs"])
    if can_embed(result):
        files["tsne"] = folder / "tsne.png"
        embedding = embed_queries(result, generator, n_per_source=tsne_points, random_state=result.random_state)
        save_figure(embedding_figure(embedding), files["tsne"])
    return files


def _reproduction_table(result: Any) -> list[str]:
    steps = sorted({int(t) for r in result.rows for t in r["at_steps"]})
    header = ["examination", "instances", "model queries", *[f"T={t}" for t in steps], "extreme found", "paper"]
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in result.rows:
        at = {int(t): v for t, v in r["at_steps"].items()}
        values = [f"{at[t]:.1%}" if t in at else "-" for t in steps]
        paper = r.get("paper")
        paper_text = ", ".join(f"T={t}: {v:.2f}%" for t, v in paper.items()) if paper else "-"
        out.append(f"| {md_cell(r['label'])} | {r['n_instances']} | {r['model_queries']:,} | " + " | ".join(values)
                   + f" | {r['worst_found']:.1%} | {paper_text} |")
    return out


def reproduction_markdown(result: Any, *, brief: bool = False, **_: Any) -> str:
    """Findings (``brief``), or findings, the table of mean true-class probabilities and the models."""
    findings = [f"- {line}" for line in result.findings]
    if brief:
        return "\n".join([f"{result.experiment} ({result.mode} mode):", *findings])
    models = [
        f"- {name}: {m['settings']['architecture']}, {m['n_train']:,} training renders "
        f"(m = {m['settings']['renders_per_object']}"
        + (f", camera elevation limited to +-{m['settings']['elevation_limit']:g}" if m["settings"].get("elevation_limit") else "")
        + f"), validation accuracy {m['validation_accuracy']:.1%}"
        for name, m in result.models.items()
    ]
    rules = [f"- {r['label']}: " + ("; ".join(r["rules"][:2]) or "no rule") for r in result.rows if "rules" in r]
    return "\n".join([
        f"## {result.experiment} ({result.mode} mode)", "", *findings, "",
        "Mean true-class probability at step T (T=0: first query, before any update; lower = harsher). "
        "Extreme found: the lowest true-class probability found per instance (the highest in strength mode), "
        "averaged:", "",
        *_reproduction_table(result), "", *(["Weakness rules (top two):", *rules, ""] if rules else []),
        "Reference models:", *models,
    ])


def reproduction_figure(result: Any, **_: Any) -> Any:
    """Mean true-class probability over t, one panel per model (first word of the row labels).

    Curves are moving averages over ``T / 50`` steps (the step-T values of
    BO and random search jump from step to step); the t-SNE panel of the
    planted weakness comes last when there is one.
    """
    groups: dict[str, list[str]] = {}
    for label in result.curves:
        groups.setdefault(label.split()[0].rstrip(","), []).append(label)
    panels = len(groups) + (result.embedding is not None)
    cols = min(3, panels)
    rows = int(np.ceil(panels / cols))
    fig, axes = new_figure(rows, cols, figsize=(5.2 * cols, 3.8 * rows), squeeze=False)
    flat = list(axes.ravel())
    for ax, (group, labels) in zip(flat, groups.items()):
        window = 1
        for label in labels:
            values = np.asarray(result.curves[label], dtype=float)
            window = max(1, len(values) // 50)
            smooth = np.convolve(values, np.ones(window) / window, mode="valid")
            ax.plot(np.arange(window, len(values) + 1), smooth, label=label, linewidth=1.2)
        suffix = f" (moving average over {window} steps)" if window > 1 else ""
        ax.set(xlabel="step t", ylabel="mean true-class probability", ylim=(-0.02, 1.02),
               title=f"{result.experiment}: {group}{suffix}")
        ax.title.set_fontsize(9)
        ax.legend(fontsize=6)
    if result.embedding is not None:
        _scatter(flat[len(groups)], result.embedding)
    for ax in flat[panels:]:
        ax.axis("off")
    fig.tight_layout()
    return fig


#: this module's renderers by (result type, format), gathered by :func:`fitaudit.report.renderer_table`
RENDERERS: dict[tuple[str, str], Callable[..., Any]] = {
    ("ExaminationResult", "markdown"): examination_markdown,
    ("ExaminationResult", "html"): examination_html,
    ("WeaknessReport", "markdown"): weakness_markdown,
    ("ExaminationResult", "figure"): examination_figure,
    ("WeaknessReport", "figure"): weakness_figure,
    ("QueryEmbedding", "figure"): embedding_figure,
    ("ExaminerReproduction", "markdown"): reproduction_markdown,
    ("ExaminerReproduction", "figure"): reproduction_figure,
}
