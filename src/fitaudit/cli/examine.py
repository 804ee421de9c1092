"""``fitaudit examine``: the adversarial examiner (Shu et al., AAAI 2020) on a user's images or a scenario.

::

    fitaudit examine --model model.onnx --images test/ --resize 36 --crop 32 --examiner bo --steps 100 \\
        --instances 24 --factor rotation=-15:15
    fitaudit examine --scenario shapes --model runs/alexnet/model --examiner bo --steps 100 --instances 12

examines the model's worst case over the nuisance factors of its inputs: the
image-transform generator over a sample of correctly classified images of
``--images`` (rotation, translation, scale, brightness, contrast,
saturation, blur, noise, occlusion; docs/examiner.md#your-own-images), or the Shapes
world's camera and lights on held-out objects. It prints the average vs
worst-case true-class probability and the factor ranges where the model
fails. ``--out`` receives the result (JSON, without the query log), the query
log (``queries.npz``), the curves, the per-factor histograms, the
sensitivity profile, the worst inputs (alone and beside their originals),
the t-SNE picture of random vs examiner-found inputs
(:func:`fitaudit.report.examine.write_examination_figures`), and the
checkpoints (a rerun resumes).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit.cli._common import (
    add_dask_option,
    add_device_option,
    add_pipeline_options,
    add_seed,
    add_trust_options,
    examples,
    option_help,
    out_folder,
    parse_factors,
    pipeline_from_options,
    trust_options,
)

SCENARIOS = ("shapes",)
#: the examiner used when --examiner is not given
DEFAULT_EXAMINER = "bo"
#: the Shapes render size when neither the model nor --image-size gives one
DEFAULT_IMAGE_SIZE = 32
#: examiners whose number of queries per step can be set, and the constructor setting that sets it
QUERIES_PER_STEP = {"rl": "batch_size", "random": "queries_per_step", "grid": "queries_per_step"}


def _saved_config(model: str) -> dict[str, Any]:
    """The config.json of a saved torch model (in its folder or beside the file); empty if there is none."""
    path = Path(model)
    from fitaudit.models.formats import FORMATS, find_format

    # only the torch model named (its folder, config.json or weights): an ONNX file's config.json neighbour is not its
    if find_format(path) is not FORMATS["torch"]:
        return {}  # a Hugging Face config is read by read_model_metadata
    config_file = path / "config.json" if path.is_dir() else path.with_name("config.json")
    if not config_file.is_file():
        return {}
    from fitaudit.models.formats.torch_folder import read_torch_config

    return dict(read_torch_config(config_file, name="--model"))


def _model_classes(model: str, config: dict[str, Any], classes: str | None) -> list[str] | None:
    """Class names: ``--classes`` (the names the model records, if any), else the recorded ones.

    Recorded: the saved config's ``classes`` or ``metadata.class_names``, else an ONNX file's metadata.
    """
    from fitaudit.models.formats.base import ModelMetadata
    from fitaudit.models.io import read_model_metadata

    names = config.get("classes") or config.get("metadata", {}).get("class_names")
    recorded = ModelMetadata(classes=list(names)) if names else read_model_metadata(model, name="--model")
    if classes is None:
        return recorded.classes
    given = [c.strip() for c in classes.split(",") if c.strip()]
    if not given:
        raise InputError("`--classes` must list class names separated by commas.")
    recorded.check_classes(given, "`--classes`")
    return given


def examiner_options(examiner: str, queries_per_step: int | None) -> dict[str, Any] | None:
    """The examiner's settings for ``--queries-per-step`` (the RL examiner's batch B)."""
    if queries_per_step is None:
        return None
    key = examiner.strip().lower()
    if key not in QUERIES_PER_STEP:
        raise InputError(
            f"`--queries-per-step` works with the {', '.join(QUERIES_PER_STEP)} examiners; "
            f"{examiner!r} proposes one query per instance per step."
        )
    if queries_per_step < 1:
        raise InputError(f"`--queries-per-step` must be a positive integer; got {queries_per_step}.")
    return {QUERIES_PER_STEP[key]: queries_per_step}


def _pipeline(args: argparse.Namespace) -> Any:
    """``--resize``/``--crop``/``--mean``/``--std`` over the model's recorded pipeline (the one rule); the crop defaults
    to its input size."""
    return pipeline_from_options(args, [args.model], required=True)


def _pipeline_info(choice: Any, classifier: Any, dataset: Any) -> dict[str, Any]:
    """The choice with the accuracy on the folder's images under it and, when it is not the model's, under that."""
    from fitaudit.auditing.images import image_accuracy, recorded_image_accuracy

    used = image_accuracy(classifier, dataset, choice.pipeline, name="--images")
    recorded = recorded_image_accuracy(classifier, dataset, choice)
    info: dict[str, Any] = choice.to_dict(used, recorded)
    return info


def _n_outputs(classifier: Any, generator: Any) -> int:
    """The model's number of outputs, from one probe input."""
    probe = generator.generate(np.zeros(1, dtype=np.int64), generator.factor_space.defaults[None, :])
    return int(np.asarray(classifier.logits(probe)).shape[1])


def _check_class_count(classifier: Any, generator: Any, names: list[str] | None) -> None:
    """`--classes` (or the recorded names) must name every output of the model."""
    if names is None:
        return
    k = _n_outputs(classifier, generator)
    if len(names) != k:
        raise InputError(
            f"`--classes` names {len(names)} classes ({', '.join(names)}) but the model has {k} outputs; "
            "give one name per output, in the model's label order."
        )


def _image_scenario(args: argparse.Namespace, classifier: Any, config: dict[str, Any]) -> Any:
    from fitaudit.data.images import check_model_classes, open_images
    from fitaudit.examine.scenarios import image_scenario

    names = _model_classes(args.model, config, args.classes)
    dataset = open_images(args.images, classes=names, name="--images")
    choice = _pipeline(args)
    scenario = image_scenario(
        classifier, dataset, pipeline=choice.pipeline, factors=parse_factors(args.factor, "--factor"),
        instances=args.instances, random_state=args.seed, progress=not args.quiet, option="--images", device=args.device,
        factor_option="--factor",
    )
    check_model_classes(dataset, _n_outputs(classifier, scenario.generator), model=args.model, name="--images")
    return scenario, _pipeline_info(choice, classifier, dataset)


def _shapes_scenario(args: argparse.Namespace, config: dict[str, Any]) -> Any:
    from fitaudit.examine.scenarios import shapes_scenario

    names = _model_classes(args.model, config, args.classes)
    if names is None:
        raise InputError(
            "`--classes` is needed: the model does not record its class names (give them in the model's "
            "label order, e.g. --classes sphere,cube,torus)."
        )
    shape = config.get("input_shape")
    if shape and args.image_size is not None and args.image_size != int(shape[-1]):
        raise InputError(
            f"`--image-size` {args.image_size} contradicts the model's recorded input size {int(shape[-1])}; "
            "leave --image-size out."
        )
    size = int(shape[-1]) if shape else DEFAULT_IMAGE_SIZE if args.image_size is None else args.image_size
    return shapes_scenario(names, args.instances, image_size=size)


def _handler(args: argparse.Namespace) -> Any:
    from fitaudit.examine import examine
    from fitaudit.examine.files import write_examination
    from fitaudit.examine.scenarios import shapes_space_check
    from fitaudit.models import load_model
    from fitaudit.report.examine import write_examination_figures

    if args.images is not None and args.scenario is not None:
        raise InputError("`--images` and `--scenario` exclude each other: examine your images or a scenario.")
    scenario_name = args.scenario if args.images is None else None
    if scenario_name is not None and scenario_name not in SCENARIOS:
        raise InputError(f"`--scenario` must be one of {', '.join(SCENARIOS)}; got {scenario_name!r}.")
    if args.instances < 1:
        raise InputError(f"`--instances` must be a positive integer; got {args.instances}.")
    if args.range and args.images is not None:
        raise InputError("`--range` is for scenarios; with `--images` narrow the factors with --factor NAME=LOW:HIGH.")
    if args.image_size is not None and args.images is not None:
        raise InputError("`--image-size` is the Shapes scenario's render size; with `--images` use --resize/--crop.")
    options = examiner_options(args.examiner, args.queries_per_step)
    folder = out_folder(args.out)
    config = _saved_config(args.model)
    classifier = load_model(args.model, name="--model", device=args.device, **trust_options(args))
    if args.images is not None:
        scenario, pipeline = _image_scenario(args, classifier, config)
        ranges = None
    else:
        scenario = _shapes_scenario(args, config)
        ranged, factored = parse_factors(args.range, "--range") or {}, parse_factors(args.factor, "--factor") or {}
        both = sorted(set(ranged) & set(factored))
        if both:
            raise InputError(f"`--range` and `--factor` both set {', '.join(both)}; give each factor once.")
        ranges = {**ranged, **factored} or None
        _check_class_count(classifier, scenario.generator, scenario.generator.class_names)
    result = examine(
        classifier, scenario.generator, examiner=args.examiner, steps=args.steps, instances=scenario.instances,
        maximize=not args.strength, loss=args.loss, ranges=ranges, examiner_options=options,
        random_state=args.seed, n_jobs=args.n_jobs, checkpoint_dir=folder / "checkpoints",
        progress=not args.quiet,
    )
    if args.images is not None:
        result.space_check = scenario.check_space(result)
        result.pipeline = pipeline
    else:
        result.space_check = shapes_space_check(
            classifier, result, class_names=scenario.generator.class_names, image_size=scenario.generator.image_size,
            train_ranges=config.get("metadata", {}).get("train_factor_ranges"), random_state=args.seed,
        )
    files = write_examination(result, folder)
    files.update(write_examination_figures(result, scenario.generator, folder))
    print(f"Files: {', '.join(str(f) for f in files.values())}", file=sys.stderr)
    if args.json:  # the verdict first, then the result without its query logs (they are in the files)
        from fitaudit.report.verdicts import verdict_json

        return {"verdict": verdict_json(result), **result.to_dict(include_queries=False)}
    return result


def summary(result: Any) -> str:
    """Verdict sentences and the top weakness rules."""
    from fitaudit.report.examine import summary_lines
    from fitaudit.report.pipelines import pipeline_lines

    return "\n".join([*summary_lines(result), *pipeline_lines(getattr(result, "pipeline", None))])


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``fitaudit examine``."""
    parser = subparsers.add_parser(
        "examine",
        parents=parents,
        **examples("fitaudit examine --model model.onnx --images test/ --resize 36 --crop 32 --steps 100",
                   "fitaudit examine --scenario shapes --model runs/alexnet/model --examiner bo --instances 12"),
        help="worst case of a classifier over the factors of its inputs (adversarial examiner)",
        description=(
            "Examine a classifier's worst case over the nuisance factors of its inputs with a search strategy "
            "that learns from its queries (Shu et al., AAAI 2020): your labelled images (--images) under "
            "rotation, translation, scale, brightness, contrast, saturation, blur, noise and occlusion, or the "
            "camera and lights of a built-in scenario (--scenario shapes, the default without --images). "
            f"The default examiner is {DEFAULT_EXAMINER!r} (Bayesian optimisation, GP-UCB). Prints the average "
            "true-class probability at the last step, the worst case found per instance, and the factor ranges "
            "where the model fails."
        ),
    )
    parser.add_argument("--model", required=True, help="a saved model (torch folder with config.json, .onnx, .skops)")
    parser.add_argument("--images", default=None, help=option_help("--images", "examined under image transforms"))
    parser.add_argument("--scenario", default=None, help="a built-in generator instead of --images (only 'shapes'; the default)")
    add_pipeline_options(parser, crop_default="the model file's, else its input size")
    parser.add_argument("--factor", action="append", metavar="NAME=LOW:HIGH",
                        help="narrow or widen (NAME=VALUE: fix) a factor, e.g. rotation=-15:15; repeatable")
    parser.add_argument("--examiner", default=DEFAULT_EXAMINER,
                        help="bo (default), rl, random, grid or optuna:SAMPLER (e.g. optuna:tpe)")
    parser.add_argument("--steps", type=int, default=100, help="T, steps per instance (default 100)")
    parser.add_argument("--instances", type=int, default=12,
                        help="instances to examine: correctly classified images, several per class (default 12)")
    parser.add_argument("--classes", default=None, help="class names in the model's label order (default: the model's metadata)")
    parser.add_argument("--image-size", type=int, default=None,
                        help=f"Shapes render size when the model does not record it (default {DEFAULT_IMAGE_SIZE})")
    parser.add_argument("--loss", default="true_class_probability", help="true_class_probability, zero_one or margin")
    parser.add_argument("--strength", action="store_true", help="look for strength (minimise the loss) instead")
    parser.add_argument("--range", action="append", metavar="NAME=LOW,HIGH", help="a scenario's factor range (as --factor)")
    parser.add_argument("--queries-per-step", type=int, default=None,
                        help="queries per instance per step: the RL batch B, or the random and grid examiners'")
    parser.add_argument("--n-jobs", type=int, default=None, help="chunks of instances in parallel (joblib)")
    add_device_option(parser)
    add_dask_option(parser, "the chunks of instances")
    parser.add_argument("--out", default="fitaudit-out/examine", help=option_help(
        "--out", "a folder: the JSON, query log, figures and checkpoints; default fitaudit-out/examine"))
    add_trust_options(parser)
    add_seed(parser, "the examiners, the samples of images and the reference sample")
    parser.set_defaults(handler=_handler, summary=summary, out_is_folder=True)
