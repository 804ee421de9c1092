"""Tables, findings and figures of the papers' reproductions.

One ``"markdown"`` and one ``"figure"`` renderer per reproduction result
(:mod:`fitaudit.experiments.overfit`, :mod:`fitaudit.experiments.pmv`). The
markdown renderers take ``brief``: with ``brief=True`` only the findings (a
verdict sentence and the numbers behind it), as ``fitaudit reproduce``
prints them; otherwise the findings and the full tables.
:func:`write_reproduction` writes a result's JSON, markdown and PNG (through
:func:`fitaudit.report.save_reproduction`, which hands it the dispatch).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit.checkpoint import atomic_write_text, check_folder
from fitaudit.experiments.pmv.tree_depth import SELECTORS as DEPTH_SELECTORS
from fitaudit.report.figures import new_figure, save_figure
from fitaudit.results import Result


def write_reproduction(result: Any, folder: str | os.PathLike[str], *, render: Callable[..., Any]) -> dict[str, str]:
    """Write ``EXPERIMENT-MODE.json``, ``.md`` and ``.png`` for a reproduction result, drawn by ``render``.

    Returns
    -------
    dict
        Paths of the files written: ``json``, ``markdown``, ``figure``.
    """
    target = check_folder(folder, "folder")
    if not isinstance(result, Result) or not hasattr(result, "experiment") or not hasattr(result, "mode"):
        raise InputError(f"`result` must be a reproduction's result; got {type(result).__name__}.")
    stem = f"{getattr(result, 'experiment')}-{getattr(result, 'mode')}"  # noqa: B009 (Result has neither)
    files = {
        "json": target / f"{stem}.json",
        "markdown": target / f"{stem}.md",
        "figure": target / f"{stem}.png",
    }
    atomic_write_text(files["json"], json.dumps(result.to_dict(), indent=2) + "\n")
    atomic_write_text(files["markdown"], render(result, "markdown") + "\n")
    save_figure(render(result, "figure"), files["figure"])
    return {kind: str(path) for kind, path in files.items()}


def _range(values: list[float]) -> str:
    if not values:
        return "none"
    return f"{min(values):.3g}" if len(values) == 1 else f"{min(values):.3g} .. {max(values):.3g}"


# ----------------------------------------------------------------- overfit-synthetic (Fig. 4)


def synthetic_markdown(result: Any, *, brief: bool = False) -> str:
    """Where each case is rejected, then the mean p-value per N and eps."""
    last = len(result.n_values) - 1
    dependent = {k: result.rejected_eps("dependent", k) for k in (0, last)}
    independent = [result.rejected_eps("independent", k) for k in range(len(result.n_values))]
    reproduced = bool(dependent[0] or dependent[last]) and not any(independent)
    lowest = {case: float(np.min(result.mean_pvalue[case])) for case in ("dependent", "independent")}
    if reproduced:
        verdict = (
            "Reproduced: the model trained on half of its test set is rejected for a middle range of eps "
            "and the independent one is not (Werpachowski et al. 2019, Fig. 4)."
        )
    elif not (dependent[0] or dependent[last]):
        verdict = "Not reproduced: Fig. 4 has the dependent case rejected for a middle range of eps; here it never is."
    else:
        verdict = "Not reproduced: Fig. 4 never rejects the independent case; here it is rejected too."
    lines = [
        verdict,
        f"- dependent case: mean p < 0.05 at eps {_range(dependent[0])} with N = {result.n_values[0]}, "
        f"eps {_range(dependent[last])} with N = {result.n_values[last]}; smallest mean p {lowest['dependent']:.3g}; "
        f"test error {result.mean_error_rate['dependent']:.3f}",
        f"- independent case: smallest mean p {lowest['independent']:.3g}; "
        f"test error {result.mean_error_rate['independent']:.3f}",
        f"- {result.mode} mode: {result.config['repetitions']} repetitions, {result.config['steps']} "
        f"RMSProp steps, N in {result.n_values}",
    ]
    if brief:
        return "\n".join(lines)
    for case in ("dependent", "independent"):
        lines += ["", f"Mean p-value, {case} case:", "", "| eps | " + " | ".join(f"N = {n}" for n in result.n_values) + " |"]
        lines.append("|---" * (len(result.n_values) + 1) + "|")
        for e, eps in enumerate(result.eps):
            cells = " | ".join(f"{result.mean_pvalue[case][k][e]:.3g}" for k in range(len(result.n_values)))
            lines.append(f"| {eps:.3g} | {cells} |")
    return "\n".join(lines)


def synthetic_figure(result: Any) -> Any:
    """Average p-value vs eps, one panel per case, one line per N."""
    fig, axes = new_figure(1, 2, figsize=(10, 4), sharey=True)
    for ax, case in zip(axes, ("dependent", "independent")):
        for k, n in enumerate(result.n_values):
            ax.plot(result.eps, result.mean_pvalue[case][k], marker="o", ms=3, label=f"N = {n}")
        ax.axhline(0.05, color="grey", lw=0.8, ls="--")
        ax.set_xscale("log")
        ax.set_xlabel("eps")
        ax.set_title(f"{case} (mean error {result.mean_error_rate[case]:.3f})")
    axes[0].set_ylabel("average p-value")
    axes[0].legend()
    fig.suptitle(
        f"N-model test on the Gaussian-margin problem ({result.mode}: "
        f"{result.config['repetitions']} reps, {result.config['steps']} steps)"
    )
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------- overfit-shapes (Fig. 5)


def shapes_markdown(result: Any, *, brief: bool = False) -> str:
    """The strongest AEG's verdict on both sets, then every variant's curve."""
    strongest = {name: result.curves[name]["strongest"] for name in ("train", "test")}
    reproduced = strongest["train"]["full_pvalue"] < 0.05 <= strongest["test"]["full_pvalue"]
    verdict = (
        "Reproduced: the strongest translational AEG rejects independence on the CNN's training set "
        "and not on held-out objects (Werpachowski et al. 2019, Fig. 5)."
        if reproduced
        else "Not reproduced: Fig. 5 has the training set rejected and the test set not; here the "
        f"training set gets p = {strongest['train']['full_pvalue']:.3g} and the test set "
        f"p = {strongest['test']['full_pvalue']:.3g}."
        + (" The quick mode only checks that the pipeline runs; its CNN is too small and too "
           "briefly trained to show the effect." if result.mode == "quick" else "")
    )
    lines = [
        verdict,
        f"- CNN accuracy: training set {result.train_accuracy:.3f}, held-out objects {result.test_accuracy:.3f} "
        f"({result.n_train} and {result.n_test} images; {result.training['epochs']} epochs)",
    ]
    for name in ("train", "test"):
        entry = strongest[name]
        lines.append(
            f"- {name} set, strongest AEG on {result.n_audited} images: p = {entry['full_pvalue']:.3g}; "
            f"rejection rate {entry['pairwise_reject'][-1]:.2f} at m = {result.sizes[-1]}, "
            f"{entry['pairwise_reject'][0]:.2f} at m = {result.sizes[0]}"
        )
    lines.append(
        f"- {result.mode} mode, eps = {result.eps}, margin = {result.margin}; valid because the canvases "
        "are periodic and the objects uniformly placed (G3)"
    )
    if brief:
        return "\n".join(lines)
    lines += ["", result.warning]
    lines += ["", "| set | AEG | R_S | R_g | success | all-data p | " + " | ".join(
        f"p (m={m})" for m in result.sizes) + " |", "|---" * (6 + len(result.sizes)) + "|"]
    for name, per_variant in result.curves.items():
        for variant, entry in per_variant.items():
            cells = " | ".join(f"{p:.3g}" for p in entry["pairwise"])
            lines.append(
                f"| {name} | {variant} | {entry['risk_plain']:.3f} | {entry['risk_adversarial']:.3f} | "
                f"{entry['success_rate']:.3f} | {entry['full_pvalue']:.3g} | {cells} |"
            )
    return "\n".join(lines)


def shapes_figure(result: Any) -> Any:
    """Mean p-value vs sample size, one panel per set (Fig. 5 analogue)."""
    from fitaudit.report.overfit import pvalue_curves_figure

    return pvalue_curves_figure(
        {"sizes": result.sizes, "curves": result.curves},
        title=f"Shapes {result.training['architecture']}, eps={result.eps}",
    )


# ------------------------------------------------------------------- overfit-imagefolder (Sec. 5)


def imagefolder_markdown(result: Any, *, brief: bool = False) -> str:
    """Whether the command line rejected the training folder and not the unseen one, then the numbers."""
    train, unseen = result.runs["train"], result.runs["unseen"]
    if train["reject"] and not unseen["reject"]:
        verdict = (
            "As expected: `fitaudit overfit --images` rejects independence on the CNN's training folder "
            f"(p = {train['pvalue']:.3g}) and not on the folder of unseen objects (p = {unseen['pvalue']:.3g})."
        )
    else:
        verdict = (
            "Not as expected (training folder rejected, unseen folder not): the training folder gets "
            f"p = {train['pvalue']:.3g} ({'rejected' if train['reject'] else 'not rejected'}), the unseen "
            f"folder p = {unseen['pvalue']:.3g} ({'rejected' if unseen['reject'] else 'not rejected'})."
            + (" The quick mode only checks that the path runs; its CNN is too small and too briefly "
               "trained to show the effect." if result.mode == "quick" else "")
        )
    p = result.pipeline
    lines = [
        verdict,
        f"- CNN accuracy through the pipeline: training folder {result.train_accuracy:.3f}, unseen "
        f"{result.unseen_accuracy:.3f} ({result.n_images['train']} and {result.n_images['unseen']} images, "
        f"{result.n_images['jpeg']} JPEG and {result.n_images['png']} PNG files of {result.render_size} px; "
        f"{result.training['epochs']} epochs)",
        f"- pipeline from the ONNX file: resize {p['resize']}, centre crop {p['crop']}, P = {p['margin']}, "
        f"eps = {result.eps} (floor(P / 3)); {result.mode} mode",
    ]
    if brief:
        return "\n".join(lines)
    lines += ["", result.warning, "", "| folder | m | R_S | R_g | success | evaluations / image | pairwise p | CI p | s |",
              "|---|---|---|---|---|---|---|---|---|"]
    for name, run in result.runs.items():
        lines.append(
            f"| {name} | {run['m']} | {run['risk_plain']:.3f} | {run['risk_adversarial']:.3f} | "
            f"{run['success_rate']:.3f} | {run['evaluations_per_example']:.1f} | {run['pvalue']:.3g} | "
            f"{run['ci_pvalue']:.3g} | {run['seconds']:.0f} |"
        )
    lines += ["", "Commands: " + "; ".join(f"`{run['command']}`" for run in result.runs.values())]
    return "\n".join(lines)


def imagefolder_figure(result: Any) -> Any:
    """R_S and R_g per folder, with the pairwise p-value above each pair of bars."""
    fig, ax = new_figure(figsize=(5, 3.3))
    names = list(result.runs)
    x = np.arange(len(names))
    ax.bar(x - 0.18, [result.runs[n]["risk_plain"] for n in names], width=0.36, label="R_S (error rate)")
    ax.bar(x + 0.18, [result.runs[n]["risk_adversarial"] for n in names], width=0.36, label="R_g (adversarial)")
    for i, name in enumerate(names):
        top = max(result.runs[name]["risk_plain"], result.runs[name]["risk_adversarial"])
        ax.annotate(f"p = {result.runs[name]['pvalue']:.3g}", (i, top), ha="center", va="bottom", fontsize="small")
    ax.set_xticks(x, [f"{n} folder" for n in names])
    ax.set_ylabel("risk estimate")
    ax.set_title(f"fitaudit overfit --images, eps = {result.eps}", fontsize="small")
    ax.legend(fontsize="x-small")
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- pmv-comparison


def comparison_markdown(result: Any, *, brief: bool = False) -> str:
    """Agreement of the two selections, the unbounded tree's rank, then every score."""
    n = len(result.settings)
    tree = "Tree, no max_depth"
    lowest = sum(
        min(s["classifiers"], key=lambda c: s["classifiers"][c]["pmv"]) == tree for s in result.settings
    )
    lines = [
        f"PMV and {'3' if result.mode == 'quick' else '10'}-fold CV select the same classifier in "
        f"{result.n_agree} of {n} settings; the unbounded decision tree, which memorises flipped labels, "
        f"has the smallest |k_S| in {lowest} of {n}.",
    ]
    for s in result.settings:
        lines.append(
            f"- {s['dataset']}, noise {s['noise']:g}: PMV selects {s['pmv_selects']} (CV accuracy "
            f"{s['cv_accuracy_of_pmv_choice']:.3f}), CV selects {s['cv_selects']} ({s['best_cv_accuracy']:.3f})"
        )
    if brief:
        return "\n".join(lines)
    lines += [
        "",
        "| data | noise | classifier | PMV abs(k_S) | CV test acc | abs(train - test) | train acc r=0 |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in result.settings:
        for name in result.classifiers:
            row = s["classifiers"][name]
            marks = ("P" if name == s["pmv_selects"] else "") + ("C" if name == s["cv_selects"] else "")
            lines.append(
                f"| {s['dataset']} | {s['noise']:g} | {name}{' [' + marks + ']' if marks else ''} | "
                f"{row['pmv']:.3f} | {row['cv_test_accuracy']:.3f} | {row['cv_gap']:.3f} | "
                f"{row['train_accuracy_r0']:.3f} |"
            )
    lines += ["", "[P] = selected by PMV (largest abs(k_S)), [C] = selected by CV (largest test accuracy)."]
    return "\n".join(lines)


def comparison_figure(result: Any) -> Any:
    """One panel per setting: PMV score against CV test accuracy, one point per classifier."""
    cols = len({s["noise"] for s in result.settings})
    rows = len(result.settings) // cols
    fig, axes = new_figure(rows, cols, figsize=(4 * cols, 3.3 * rows), squeeze=False)
    for ax, s in zip(axes.ravel(), result.settings):
        for i, name in enumerate(result.classifiers):
            row = s["classifiers"][name]
            ax.scatter(row["cv_test_accuracy"], row["pmv"], color=f"C{i}", label=name)
        ax.set_title(f"{s['dataset']}, noise {s['noise']:g}", fontsize="small")
        ax.set_xlabel("CV test accuracy")
        ax.set_ylabel("PMV abs(k_S)")
    axes.ravel()[0].legend(fontsize="x-small")
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- pmv-tree-depth



def _depth_text(depths: list[Any]) -> str:
    return ", ".join("None" if d is None else str(d) for d in depths)


def tree_depth_markdown(result: Any, *, brief: bool = False) -> str:
    """Chosen depths (spread) and held-out accuracy of each method's choice."""
    cap = result.depth_cap()
    pmv_unbounded = sum(d is None for s in result.settings for d in s["chosen_depth"]["pmv"])
    n_choices = sum(len(s["chosen_depth"]["pmv"]) for s in result.settings)
    lines = [
        f"PMV chose a bounded depth in {n_choices - pmv_unbounded} of {n_choices} runs "
        "(an unbounded tree memorises the flipped labels, so its |k_S| is small).",
    ]
    for s in result.settings:
        parts = []
        for key, label in DEPTH_SELECTORS:
            depths = result.numeric_depths(s["chosen_depth"][key])
            parts.append(
                f"{label} depth {depths.mean():.1f} (sd {depths.std():.1f}), held-out accuracy "
                f"{np.mean(s['test_accuracy'][key]):.3f}"
            )
        lines.append(f"- {s['dataset']} {s['size']} ({s['n_train']} training points): " + "; ".join(parts))
    if brief:
        return "\n".join(lines)
    lines += [
        "",
        f"| data | size (n train) | method | depth chosen per run | depth mean (sd), None = {cap} | "
        "held-out acc mean (sd) |",
        "|---|---|---|---|---|---|",
    ]
    for s in result.settings:
        for key, label in DEPTH_SELECTORS:
            chosen = s["chosen_depth"][key]
            depths = result.numeric_depths(chosen)
            acc = np.array(s["test_accuracy"][key])
            lines.append(
                f"| {s['dataset']} | {s['size']} ({s['n_train']}) | {label} | {_depth_text(chosen)} | "
                f"{depths.mean():.1f} ({depths.std():.1f}) | {acc.mean():.3f} ({acc.std():.3f}) |"
            )
    return "\n".join(lines)


def tree_depth_figure(result: Any) -> Any:
    """PMV score and CV accuracy against depth, mean over runs, one panel per setting."""
    cap = result.depth_cap()
    x = result.numeric_depths(result.depths)
    fig, axes = new_figure(1, len(result.settings), figsize=(4 * len(result.settings), 3.3), squeeze=False)
    for ax, s in zip(axes.ravel(), result.settings):
        ax.plot(x, s["mean_pmv_curve"], marker="o", color="C0")
        ax.set_xlabel(f"max_depth ({cap} = None)")
        ax.set_ylabel("PMV abs(k_S)", color="C0")
        twin = ax.twinx()
        twin.plot(x, s["mean_cv_curve"], marker="s", color="C1")
        twin.set_ylabel("CV accuracy", color="C1")
        ax.set_title(f"{s['dataset']} {s['size']}", fontsize="small")
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------------------ pmv-mlp-width


def mlp_width_markdown(result: Any, *, brief: bool = False) -> str:
    """The two selections, then PMV and errors per width."""
    chosen = result.widths.index(result.pmv_selects)
    lines = [
        f"PMV selects hidden width {result.pmv_selects}; the validation curve selects "
        f"{result.validation_selects} (validation error {min(result.validation_error):.4f}; "
        f"{result.validation_error[chosen]:.4f} at PMV's choice).",
        f"- |k_S| from {min(result.pmv):.3f} to {max(result.pmv):.3f} over widths {result.widths[0]} .. "
        f"{result.widths[-1]} ({result.n_samples} images of digits 0 and 1, {result.mode} mode)",
    ]
    if brief:
        return "\n".join(lines)
    lines += [
        "",
        "| width | PMV abs(k_S) | train acc at largest rate | train error (70%) | validation error (30%) |",
        "|---|---|---|---|---|",
    ]
    for i, w in enumerate(result.widths):
        lines.append(
            f"| {w} | {result.pmv[i]:.4f} | {result.accuracy_at_largest_rate[i]:.3f} | "
            f"{result.train_error[i]:.4f} | {result.validation_error[i]:.4f} |"
        )
    return "\n".join(lines)


def mlp_width_figure(result: Any) -> Any:
    """PMV score and validation error against width."""
    fig, ax = new_figure(figsize=(6, 3.5))
    ax.plot(result.widths, result.pmv, marker="o", color="C0")
    ax.set_xscale("log")
    ax.set_xlabel("hidden width")
    ax.set_ylabel("PMV abs(k_S)", color="C0")
    twin = ax.twinx()
    twin.plot(result.widths, result.validation_error, marker="s", color="C1")
    twin.set_ylabel("validation error", color="C1")
    ax.set_title("MLP on digits 0 vs 1")
    fig.tight_layout()
    return fig


#: this module's renderers by (result type, format), gathered by :func:`fitaudit.report.renderer_table`
RENDERERS: dict[tuple[str, str], Callable[..., Any]] = {
    ("SyntheticReproductionResult", "markdown"): synthetic_markdown,
    ("SyntheticReproductionResult", "figure"): synthetic_figure,
    ("OverfitShapesReproduction", "markdown"): shapes_markdown,
    ("OverfitShapesReproduction", "figure"): shapes_figure,
    ("OverfitImageFolderReproduction", "markdown"): imagefolder_markdown,
    ("OverfitImageFolderReproduction", "figure"): imagefolder_figure,
    ("PMVComparisonReproduction", "markdown"): comparison_markdown,
    ("PMVComparisonReproduction", "figure"): comparison_figure,
    ("TreeDepthReproduction", "markdown"): tree_depth_markdown,
    ("TreeDepthReproduction", "figure"): tree_depth_figure,
    ("MLPWidthReproduction", "markdown"): mlp_width_markdown,
    ("MLPWidthReproduction", "figure"): mlp_width_figure,
}
