"""``fitaudit inspect``: load a model safely, describe it, score it on data.

Example: ``fitaudit inspect --model net/ --data test.npz --json``.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, cast

from fitaudit._errors import InputError
from fitaudit._names import CLI_OPTIONS
from fitaudit.cli._common import (
    add_classes_option,
    add_device_option,
    add_pipeline_options,
    add_seed,
    add_table_options,
    add_trust_options,
    data_file,
    examples,
    normalisation_from_options,
    option_help,
    pipeline_from_options,
    probe_crop,
    refuse_table_options,
    table_options,
    trust_options,
)

if TYPE_CHECKING:
    from fitaudit.models.inspection import InspectResult

#: how each adapter kind is named in the summary
KIND_NAMES = {"torch": "a torch model", "onnx": "an ONNX model", "sklearn": "a scikit-learn model",
              "xgboost": "an XGBoost model", "lightgbm": "a LightGBM model",
              "keras": "a Keras model (run by keras's torch backend)",
              "hf": "a Hugging Face model (run as a torch module)"}


def run_inspect(args: argparse.Namespace) -> InspectResult:
    """Handler of ``fitaudit inspect``."""
    from fitaudit.models.inspection import inspect_model  # lazy: it loads scipy.stats

    if args.data is not None and args.images is not None:
        raise InputError("give the scored data as `--data` (.npz) or as `--images` (a folder or CSV), not both.")
    for option, value in (("--train-data", args.train_data), ("--models", args.models)):
        if value and args.data is None and args.images is None:
            raise InputError(f"`{option}` needs the scored data (`--data` or `--images`).")
    if args.models and len(args.models) > 1:  # the agreement estimate compares the model with one other run
        raise InputError(f"`--models` takes one other run of the same training (the agreement estimate compares two "
                         f"runs); got {len(args.models)} files: {', '.join(args.models)}. `fitaudit audit --models` "
                         "uses several (the N-model test).")
    if args.train_data is not None and args.data is None:
        raise InputError("`--train-data` goes with `--data`; with `--images`, give `--train-images`.")
    if args.train_images is not None and args.images is None:
        raise InputError("`--train-images` goes with `--images`.")
    if args.classes is not None and args.images is None:
        raise InputError("`--classes` goes with `--images` (the class folders' order); a table's labels follow the "
                         "model's classes.")
    from fitaudit.models import load_model

    def load(path: str, name: str) -> Any:
        return load_model(path, **trust_options(args), batch_size=args.batch_size,
                          device=args.device, name=name)

    adapter = load(args.model, "--model")
    if args.models:  # the same run twice would agree trivially
        from fitaudit.overfit.runs import check_distinct_runs

        check_distinct_runs([args.model, *args.models])
    result = inspect_model(args.model, adapter=adapter, model_name="--model")
    if args.data is not None or args.images is not None:  # scored once, by the audit's first parts
        _first_questions(args, adapter, [load(path, "--models") for path in args.models or []], result)
    return result


def _first_questions(args: argparse.Namespace, adapter: Any, others: list[Any], result: InspectResult) -> None:
    """The audit's first parts (auditing.first), into ``result``: accuracy with its intervals, the checks of the
    scored rows (baseline, calibration, weak slices, label problems), leakage and agreement.

    Unlike an audit, inspect stops at an accuracy at or below chance on arrays and tables, with the hint about the
    labels' order (:func:`fitaudit.models.labels.stop_at_chance`), as it did before it asked the first questions.
    """

    from fitaudit.auditing.checks import first_questions
    from fitaudit.auditing.images import recorded_image_accuracy
    from fitaudit.auditing.inputs import Dataset
    from fitaudit.data.images import check_model_classes
    from fitaudit.models.inspection import scored_arrays
    from fitaudit.models.labels import label_set, stop_at_chance
    from fitaudit.report.verdicts import word_parts

    test = train = pictures = labels = None
    if args.data is not None:
        for option, value in (("--resize", args.resize), ("--crop", args.crop)):
            if value is not None:
                raise InputError(f"`{option}` goes with --images: .npz arrays (--data) have their size; "
                                 "--mean/--std normalise them.")
        labels = label_set(adapter, args.model)
        table = {"labels": labels, **table_options(args)}
        x, y, result.margin = scored_arrays(adapter, data_file(args.data), image=args.image, name="--data", **table)
        choice = normalisation_from_options(args, [args.model, *(args.models or [])], x)
        test = Dataset(x, y, args.data)
        if args.train_data is not None:
            x_train, y_train, _ = scored_arrays(adapter, data_file(args.train_data, "--train-data"), image=args.image,
                                                name="--train-data", **table)
            normalisation_from_options(args, [args.model], x_train, "--train-data")  # pixel values in [0, 1] too
            train = Dataset(x_train, y_train, args.train_data)
    else:
        refuse_table_options(args, "--images")
        pictures = _pictures(args)
        choice = pictures.choice
        probe_crop([args.model, *(args.models or [])], [adapter, *others], pictures.pipeline)
        for option, folder in (("--images", pictures.test), ("--train-images", pictures.train)):
            if folder is not None:  # labels the model has no output for
                check_model_classes(folder, adapter.n_classes, model=args.model, name=option)
    scoring = choice.classifier(adapter) if choice.arrays else adapter  # image arrays in [0, 1], normalised
    normalisation = choice.normalisation if choice.arrays and choice.pipeline is not None else None
    if test is not None:
        stop_at_chance(test.y, scoring.predict(test.x), adapter.n_classes, name="--data", labels=labels,
                       normalisation=normalisation)
    parts = word_parts(first_questions(scoring, test=test, train=train, pictures=pictures,
                            models=[choice.classifier(o) if choice.arrays else o for o in others],
                            random_state=args.seed, progress=not args.quiet, labels=labels, names=CLI_OPTIONS,
                            normalisation=normalisation))
    accuracy: Any = parts[0].result  # the accuracy part (an AccuracyResult) comes first
    result.n_examples, result.accuracy = accuracy.n, accuracy.accuracy
    result.accuracy_interval = [accuracy.low, accuracy.high]
    result.first_questions = [{"id": p.id, "title": p.title, "verdict": p.verdict.to_dict(), "numbers": p.numbers}
                              for p in parts]
    if choice.pipeline is not None:
        recorded = choice.recorded_accuracy(adapter, test.x, test.y) if test is not None \
            else recorded_image_accuracy(adapter, cast(Any, pictures).test, choice)
        result.pipeline = choice.to_dict(accuracy.accuracy, recorded)


def _pictures(args: argparse.Namespace) -> Any:
    """The image folders through the evaluation pipeline (no shift needed: any R >= C)."""
    from fitaudit.auditing.images import ImageInputs
    from fitaudit.data.images import check_images, open_images
    from fitaudit.models.io import class_order

    choice = pipeline_from_options(args, [args.model], required=True)
    classes = class_order(args.model, args.classes, name="--classes")
    folders: list[Any] = []
    for option, path in (("--images", args.images), ("--train-images", args.train_images)):
        if path is None:
            folders.append(None)
            continue
        dataset, _ = check_images(open_images(path, classes=classes, name=option), progress=not args.quiet,
                                  name=option, skip_option=None)  # inspect cannot leave files out
        folders.append(dataset)
    return ImageInputs(test=folders[0], train=folders[1], pipeline=choice.pipeline, eps=0, broken=[], choice=choice)


def summary(result: InspectResult) -> str:
    """What was loaded and, with data, how accurate it is (and under which pipeline)."""
    from fitaudit.report.pipelines import pipeline_lines

    kind = KIND_NAMES.get(result.kind, f"a {result.kind} model")
    classes = "" if result.classes is None else f" ({', '.join(map(str, result.classes))})"
    shape = "any input size" if result.input_shape is None else "inputs of shape " + " x ".join(
        "any" if d is None else str(d) for d in result.input_shape
    )
    if result.feature_names:
        shape = f"the table columns {', '.join(result.feature_names)} (matched by name)"
    how = "loaded by running the code it brings (as --trust-code/--trust-torchscript allowed)" if result.runs_code \
        else "loaded safely"
    lines = [f"{result.model} {how}: {kind} with {result.n_classes} classes{classes}, {shape}."]
    if result.accuracy is not None:
        scored = (
            f"the centre crops of the {result.n_examples} canvases of the data (a {result.margin}-pixel margin per side)"
            if result.margin
            else f"the {result.n_examples} examples of the data"
        )
        interval = ""
        if result.accuracy_interval is not None:
            low, high = result.accuracy_interval
            interval = f" (95% interval {low:.4f}-{high:.4f}, exact)"
        lines.append(f"Accuracy on {scored}: {result.accuracy:.4f}{interval}.")
    lines += pipeline_lines(result.pipeline)
    from fitaudit.report.audit import part_lines

    for part in result.first_questions or []:  # as the audit prints its parts: the verdict's word said once
        lines += part_lines(part["verdict"]["status"], part["title"], part["verdict"]["sentence"])
    return "\n".join(lines)


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``fitaudit inspect`` to the command line."""
    parser = subparsers.add_parser(
        "inspect",
        parents=parents,
        **examples("fitaudit inspect --model model.onnx",
                   "fitaudit inspect --model clf.skops --data test.csv --label target --train-data train.csv",
                   "fitaudit inspect --model net/ --images val/ --train-images train/ --models other-run/"),
        help="load a model safely, show its classes, its accuracy on data and the first questions",
        description=(
            "Load a model (ONNX, torch safetensors + config.json folder, scikit-learn .skops, XGBoost .json/.ubj, "
            "LightGBM .txt) "
            "without unpickling anything, print its kind and number of classes and, with "
            "--data, validate the dataset and print the model's accuracy on it (on the centre "
            "crops of canvases saved with a margin, as `fitaudit shapes dataset --free-position` writes), "
            "then the first questions of an audit on it: the accuracy's exact intervals overall and per class, "
            "the model against the majority class (and, with --train-data, a scaled logistic regression fitted "
            "there), the calibration of its probabilities, its weak slices (tables) and the scored labels it "
            "says are wrong (calibration and labels need predict_proba), "
            "with --train-data (or --images and --train-images) the leakage search, with --models the "
            "agreement between runs."
        ),
    )
    parser.add_argument(
        "--model", required=True, help="model file (.onnx, .skops) or folder (weights.safetensors + config.json)"
    )
    parser.add_argument("--data", help=option_help("--data", "prints the accuracy on it"))
    add_table_options(parser)
    parser.add_argument("--image", action="store_true", help="x holds images (m, C, H, W) in [0, 1]")
    parser.add_argument("--train-data", help="training data (as --data): adds the leakage search and the baseline's "
                        "reference learner")
    parser.add_argument("--images", help=option_help("--images", "instead of --data: the scored images"))
    parser.add_argument("--train-images", help="training images (with --images): adds the leakage search")
    add_pipeline_options(parser, arrays=True)
    add_classes_option(parser)
    parser.add_argument("--models", nargs="+", help="another run of the same training (one file): adds the agreement "
                        "estimate")
    add_seed(parser, "the leakage search's calibration sample")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="examples per model call (default: a memory-bounded chunk of a table for scikit-learn, "
                        "XGBoost and LightGBM models, 256 for the others)")
    add_device_option(parser)
    add_trust_options(parser)
    parser.set_defaults(handler=run_inspect, summary=summary)
