"""``fitaudit examine``: the adversarial examiner (Shu et al., AAAI 2020) on a built-in scenario.

::

    fitaudit examine --scenario shapes --model runs/alexnet/model --examiner bo --steps 100 --instances 12

examines the model's worst case over the Shapes world's factors (camera,
lights) on held-out objects and prints the average vs worst-case true-class
probability and the factor ranges where it fails. ``--out`` receives the
result (JSON, without the query log), the query log (``queries.npz``), the
curves, the per-factor histograms and a contact sheet of the worst inputs,
and the checkpoints (a rerun resumes).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit.cli._common import add_seed, out_folder

SCENARIOS = ("shapes",)


def _model_classes(model: str, classes: str | None) -> list[str] | None:
    """Class names: ``--classes``, else the saved torch model's metadata."""
    if classes is not None:
        names = [c.strip() for c in classes.split(",") if c.strip()]
        if not names:
            raise InputError("`--classes` must list class names separated by commas.")
        return names
    names = _saved_config(model).get("metadata", {}).get("class_names")
    return list(names) if names else None


def _saved_config(model: str) -> dict[str, Any]:
    """The config.json of a saved torch model (in its folder or beside the file); empty if there is none."""
    path = Path(model)
    config_file = path / "config.json" if path.is_dir() else path.with_name("config.json")
    if not config_file.is_file():
        return {}
    from fitaudit.models.io import read_torch_config

    return dict(read_torch_config(config_file, name="--model"))


def _image_size(model: str, default: int) -> int:
    shape = _saved_config(model).get("input_shape")
    return int(shape[-1]) if shape else default


def parse_ranges(items: list[str] | None) -> dict[str, Any] | None:
    """``NAME=LOW,HIGH`` (narrow) or ``NAME=VALUE`` (fix) options as ``examine``'s ``ranges``."""
    if not items:
        return None
    out: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            numbers = [float(v) for v in value.split(",")]
        except ValueError:
            numbers = []
        if not sep or not name.strip() or len(numbers) not in (1, 2):
            raise InputError(f"`--range` must look like NAME=LOW,HIGH or NAME=VALUE; got {item!r}.")
        out[name.strip()] = numbers[0] if len(numbers) == 1 else tuple(numbers)
    return out


def shapes_scenario(model: str, classes: str | None, instances: int, image_size: int) -> tuple[Any, np.ndarray]:
    """The Shapes generator over held-out (validation) objects and the instances to examine.

    ``instances`` objects are taken class by class in turn (the first object
    of every class, then the second, ...).
    """
    from fitaudit.data.shapes import ShapesGenerator

    names = _model_classes(model, classes)
    if names is None:
        raise InputError(
            "`--classes` is needed: the model does not record its class names (give them in the model's "
            "label order, e.g. --classes sphere,cube,torus)."
        )
    per_class = math.ceil(instances / len(names))
    generator = ShapesGenerator(per_class, classes=names, image_size=_image_size(model, image_size))
    rank = np.zeros(len(generator.labels), dtype=np.int64)
    for c in np.unique(generator.labels):
        rows = np.flatnonzero(generator.labels == c)
        rank[rows] = np.arange(len(rows))
    order = np.lexsort((generator.labels, rank))
    return generator, np.sort(order[:instances])


def _handler(args: argparse.Namespace) -> Any:
    from fitaudit.examine import examine
    from fitaudit.models import as_classifier

    if args.scenario not in SCENARIOS:
        raise InputError(f"`--scenario` must be one of {', '.join(SCENARIOS)}; got {args.scenario!r}.")
    if args.instances < 1:
        raise InputError(f"`--instances` must be a positive integer; got {args.instances}.")
    folder = out_folder(args.out)
    model = as_classifier(args.model)
    generator, instances = shapes_scenario(args.model, args.classes, args.instances, args.image_size)
    options = {"queries_per_step": args.queries_per_step} if args.queries_per_step is not None else None
    result = examine(
        model, generator, examiner=args.examiner, steps=args.steps, instances=instances,
        maximize=not args.strength, loss=args.loss, ranges=parse_ranges(args.range), examiner_options=options,
        random_state=args.seed, n_jobs=args.n_jobs, checkpoint_dir=folder / "checkpoints",
        progress=not args.quiet,
    )
    files = write_outputs(result, generator, folder)
    args.summary = lambda r: summary(r, files)
    return result.to_dict(include_queries=False) if args.json else result


def write_outputs(result: Any, generator: Any, folder: Path) -> dict[str, str]:
    """``examination.json`` (no query log), ``queries.npz``, ``summary.md`` and the figures."""
    from fitaudit.checkpoint import atomic_write_text
    from fitaudit.report import render, save_figure

    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "json": folder / "examination.json",
        "queries": folder / "queries.npz",
        "markdown": folder / "summary.md",
        "curves": folder / "curves.png",
        "histograms": folder / "histograms.png",
        "contact_sheet": folder / "worst-inputs.png",
    }
    atomic_write_text(files["json"], json.dumps(result.to_dict(include_queries=False), indent=2) + "\n")
    result.save_queries(files["queries"])
    atomic_write_text(files["markdown"], render(result, "markdown") + "\n")
    save_figure(render(result, "figure", kind="curves"), files["curves"])
    save_figure(render(result, "figure", kind="histograms"), files["histograms"])
    save_figure(render(result, "figure", kind="contact_sheet", generator=generator), files["contact_sheet"])
    return {k: str(v) for k, v in files.items()}


def summary(result: Any, files: dict[str, str]) -> str:
    """Verdict sentences, the top weakness rules and the files written."""
    from fitaudit.report.examine import summary_lines

    return "\n".join([*summary_lines(result), f"Files: {', '.join(files.values())}"])


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``fitaudit examine``."""
    parser = subparsers.add_parser(
        "examine",
        parents=parents,
        help="worst case of a classifier over the factors of its inputs (adversarial examiner)",
        description=(
            "Examine a classifier's worst case over the nuisance factors (camera, lights) of a built-in "
            "scenario with a search strategy that learns from its queries (Shu et al., AAAI 2020). Prints "
            "the average true-class probability at the last step and the worst case found per instance, "
            "and the factor ranges where the model fails."
        ),
    )
    parser.add_argument("--scenario", default="shapes", help="the generator of inputs (only 'shapes')")
    parser.add_argument("--model", required=True, help="a saved model (torch folder with config.json, or .onnx)")
    parser.add_argument("--examiner", default="bo", help="rl, bo, random or optuna:SAMPLER (e.g. optuna:tpe)")
    parser.add_argument("--steps", type=int, default=100, help="T, steps per instance (default 100)")
    parser.add_argument("--instances", type=int, default=12, help="held-out objects to examine (default 12)")
    parser.add_argument("--classes", default=None, help="class names in the model's label order (default: the model's metadata)")
    parser.add_argument("--image-size", type=int, default=32, help="render size when the model does not record it")
    parser.add_argument("--loss", default="true_class_probability", help="true_class_probability, zero_one or margin")
    parser.add_argument("--strength", action="store_true", help="look for strength (minimise the loss) instead")
    parser.add_argument("--range", action="append", metavar="NAME=LOW,HIGH", help="narrow (or NAME=VALUE: fix) a factor")
    parser.add_argument("--queries-per-step", type=int, default=None, help="queries per instance per step (e.g. RL batch)")
    parser.add_argument("--n-jobs", type=int, default=None, help="chunks of instances in parallel (joblib)")
    parser.add_argument("--out", default="fitaudit-out/examine", help="folder for JSON, query log, figures, checkpoints")
    add_seed(parser, "the examiners and the reference sample")
    parser.set_defaults(handler=_handler)
