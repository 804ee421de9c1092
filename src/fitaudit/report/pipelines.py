"""The evaluation pipeline a command used, in words: which one, why, and the accuracy under the recorded one.

One reading of :meth:`fitaudit.data.pipeline_rule.PipelineChoice.to_dict`
for every command's summary and the audit's report (user guide:
docs/bring-your-model.md#one-pipeline-rule).
"""

from __future__ import annotations

from typing import Any, cast

#: the user guide's section on the rule
GUIDE = "docs/bring-your-model.md#one-pipeline-rule"

#: what no normalisation means, in one sentence
NO_NORMALISATION = ("No normalisation known: neither --mean/--std (pipeline=) nor the model file gives a mean and std, "
                    "so the model sees pixel values in [0, 1]; if it was trained on normalised images, its accuracy "
                    "here is not its own.")


def _numbers(values: Any) -> str:
    return "[" + ", ".join(f"{v:g}" for v in values) + "]"


def describe(settings: dict[str, Any], *, arrays: bool = False) -> str:
    """One pipeline's settings: ``resize 34 (shorter side), centre crop 28, mean [0.5], std [0.25]``."""
    scale = f"mean {_numbers(settings['mean'])}, std {_numbers(settings['std'])}"
    if arrays:
        return scale
    side = "both sides" if settings.get("squash") else "shorter side"
    return f"resize {settings['resize']} ({side}), centre crop {settings['crop']}, {scale}"


def pipeline_lines(info: dict[str, Any] | None, settings: dict[str, Any] | None = None) -> list[str]:
    """Sentences on the pipeline of one run: what was used and whence, both accuracies when it is not the model's.

    ``info`` is :meth:`~fitaudit.data.pipeline_rule.PipelineChoice.to_dict`
    output; ``None`` or no pipeline used gives no sentence, or, given the
    ``settings`` used (:meth:`~fitaudit.data.pipeline.EvalPipeline.to_dict`;
    a result saved before the choice was kept), the pipeline alone.
    """
    if not info or info.get("used") is None:
        return [f"Pipeline: {describe(settings)}."] if settings else []
    arrays = bool(info.get("arrays"))
    used, recorded, by = info["used"], info.get("recorded"), info.get("recorded_by")
    what = "Normalisation of the arrays" if arrays else "Pipeline"
    given = [f"--{g}" for g in info.get("given", [])]
    if recorded is None:
        whence = f"given ({', '.join(given)})" if given else "the model's input size" if not arrays else ""
        whence = f"; {whence}" if whence else ""
        whence += "; the model records none" if by is None else ""
    elif info.get("differs"):
        whence = f"; {', '.join(given)} replacing the {describe(recorded, arrays=arrays)} that {by} records"
    else:
        whence = f"; as {by} records it"
    lines = [f"{what}: {describe(used, arrays=arrays)}{whence}."] if info["normalisation"] != "none" or not arrays \
        else []
    if info.get("differs") and info.get("accuracy") is not None:
        if info.get("recorded_accuracy") is not None:
            lines.append(f"Accuracy {info['accuracy']:.4f} under this pipeline, {info['recorded_accuracy']:.4f} under "
                         "the one the model records.")
        else:
            lines.append(f"Accuracy {info['accuracy']:.4f} under this pipeline; the model does not take the images "
                         "of the one it records, so its accuracy there is not known.")
    if info["normalisation"] == "none":
        lines.append(NO_NORMALISATION)
    return lines


def _span(values: list[float]) -> str:
    low, high = min(values), max(values)
    return f"{low:.4f}" if low == high else f"{low:.4f}-{high:.4f}"


def population_lines(info: dict[str, Any] | None, metrics: dict[str, dict[str, float]],
                     recorded: dict[str, dict[str, float | None]] | None) -> list[str]:
    """The pipeline of an imported population (``fitaudit pgdl import``) and, when it is not the models' own,
    the span of their accuracies under each.

    ``info`` is the population's pipeline choice
    (:meth:`~fitaudit.data.pipeline_rule.PipelineChoice.to_dict`), ``metrics``
    each model's accuracies under it, ``recorded`` under the recorded one
    (``None`` in a value: the model does not take its images).
    """
    lines = pipeline_lines(info)
    for key, what in (("train_acc", "Training"), ("test_acc", "Test")):
        pairs = [(metrics[i][key], r[key]) for i, r in (recorded or {}).items() if key in r]
        if not pairs:
            continue
        known = [(used, mine) for used, mine in pairs if mine is not None]
        if len(known) < len(pairs):
            lines.append(f"{what} accuracy {_span([u for u, _ in pairs])} under this pipeline; "
                         f"{len(pairs) - len(known)} of {len(pairs)} models do not take the images of the one they "
                         "record, so their accuracy there is not known.")
        if known:
            lines.append(f"{what} accuracy {_span([u for u, _ in known])} under this pipeline, "
                         f"{_span([cast(float, m) for _, m in known])} under the one the models record "
                         f"({len(known)} models; each one's in --json: recorded_metrics).")
    return lines
