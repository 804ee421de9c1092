"""``fitaudit leakage``: scored examples with an exact or near twin in the training data.

Examples::

    fitaudit leakage --data test.npz --train-data train.npz
    fitaudit leakage --data test.npz --train-data train.npz --model net/      # + accuracy without twins
    fitaudit leakage --images val/ --train-images train/ --resize 64 --crop 64

Arrays ``x`` of shape ``(m, C, H, W)`` are images (small views compared up
to a 3-pixel shift, the pixels aligned and re-lit, and the JPEG lattice of
re-encodings; near twins by their relative distance), ``(m, d)`` tabular rows (standardised features);
``--space penultimate`` compares a torch model's penultimate features
instead. Tables (``--data`` as a CSV or parquet file with ``--label``) are
compared in their own columns: identifier-like columns are left out and
named, a column typed differently in the two files is refused, and the
pairs are shown as the files hold them. Image folders go through the evaluation pipeline of
:mod:`fitaudit.data.images` (``--resize``/``--crop``, or the one the model
file records) and are compared on the centre crops a model sees.

With ``--checkpoint-dir DIR`` the long steps (the features of each image
set, the calibration, the search) keep every finished block in DIR: an
interrupted run started again with the same inputs, options and fitaudit
version resumes from them and says what it reused (stderr); a changed
input, option or code is computed afresh.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Any

from fitaudit._errors import InputError
from fitaudit._validation import check_int
from fitaudit.cli._common import (
    SIZE_OPTIONS,
    add_classes_option,
    add_device_option,
    add_pipeline_options,
    add_seed,
    add_table_options,
    add_trust_options,
    add_verify_content,
    data_file,
    examples,
    normalisation_from_options,
    option_help,
    pipeline_from_options,
    refuse_table_options,
    refuse_unused,
    table,
    table_options,
    trust_options,
)

#: near pairs listed in the summary
SHOWN_PAIRS = 10


def _model(args: argparse.Namespace) -> Any:
    if args.model is None:
        return None
    from fitaudit.models import load_model

    return load_model(
        args.model, **trust_options(args), batch_size=args.batch_size, device=args.device,
        name="--model",
    )


#: options that apply to image folders only, with their defaults: set with --data, they would do nothing
#: (--mean/--std also normalise .npz image arrays for --model, as in inspect and audit)
IMAGES_ONLY: dict[str, tuple[str, Any]] = {
    **SIZE_OPTIONS, "classes": ("--classes", None), "train_images": ("--train-images", None), "skip_broken": ("--skip-broken", False),
    "image_batch": ("--image-batch", 64), "verify_content": ("--verify-content", None),
}


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    if args.threshold is not None and args.quantile is not None:
        raise InputError("give `--threshold` (a fixed distance) or `--quantile` (a calibrated one), not both.")
    quantile = {} if args.quantile is None else {"quantile": args.quantile}  # each space's own default
    return {**quantile, "threshold": args.threshold, "random_state": args.seed}


def _model_key(args: argparse.Namespace, model: Any) -> str | None:
    """Fingerprint of --model's file and how it runs (keys the stored predictions), with checkpoints only."""
    if model is None or args.checkpoint_dir is None:
        return None
    from fitaudit.models.fingerprint import model_fingerprint, run_settings

    return model_fingerprint(args.model) + run_settings(model)


def _on_arrays(args: argparse.Namespace, model: Any, checkpoints: Any) -> Any:
    from fitaudit.auditing.inputs import load_data
    from fitaudit.leakage import (
        feature_leakage,
        image_leakage,
        penultimate_features,
        tabular_leakage,
    )
    from fitaudit.models.labels import LabelSet, label_set, stop_at_chance

    table = table_options(args)
    if model is not None:  # the labels as the model's output indices (models.labels)
        labels = label_set(model, args.model)
    else:  # the labels only separate the label column; any values do
        labels = LabelSet(2, None, trained=False, any_labels=True)
    scored = load_data(str(data_file(args.data)), "--data", labels=labels, **table)
    train = load_data(str(data_file(args.train_data, "--train-data")), "--train-data", labels=labels, **table)
    x, y, x_train = scored.x, scored.y, train.x
    if x.shape[1:] != x_train.shape[1:]:
        raise InputError(
            f"`--train-data` has examples of shape {x_train.shape[1:]} but `--data` of shape {x.shape[1:]}; "
            "training and scored data must have the same features (images: the same size and channels)."
        )
    options: dict[str, Any] = {"scored_name": "--data", "train_name": "--train-data", **_settings(args)}
    choice = None
    if model is None and (args.mean is not None or args.std is not None):
        raise InputError("`--mean`/`--std` normalise the arrays a model scores; they go with `--model` (the "
                         "search compares the arrays as they are).")
    if model is not None:  # image arrays in [0, 1] reach the model normalised as it records (data.pipeline_rule)
        choice = normalisation_from_options(args, [args.model], x)
        normalisation_from_options(args, [args.model], x_train, "--train-data")
        predictions = choice.classifier(model).predict(x)
        stop_at_chance(y, predictions, model.n_classes, name="--data", labels=labels,
                       normalisation=None if choice.pipeline is None else choice.normalisation)
        options.update(y_true=y, y_pred=predictions, n_classes=model.n_classes)
    if args.space == "penultimate":
        if model is None or choice is None:
            raise InputError("`--space penultimate` needs `--model` (a torch model).")
        result = feature_leakage(*(penultimate_features(choice.classifier(model), a) for a in (x, x_train)), **options)
    elif x.ndim == 4:
        result = image_leakage(x, x_train, progress=not args.quiet, checkpoint_dir=checkpoints, **options)
    else:
        result = tabular_leakage(x, x_train, **options)
    if choice is not None and choice.pipeline is not None:  # with --mean/--std, the accuracy as the model records too
        result.pipeline = choice.to_dict(result.accuracy.accuracy if result.accuracy is not None else None,
                                         choice.recorded_accuracy(model, x, y))
    return result


def _on_folders(args: argparse.Namespace, model: Any, checkpoints: Any) -> Any:
    from fitaudit.auditing.images import recorded_image_accuracy
    from fitaudit.data.images import KEY_RULES, check_images, check_model_classes, open_images
    from fitaudit.leakage import image_leakage
    from fitaudit.leakage.folders import folder_features
    from fitaudit.models.io import class_order

    if args.space == "penultimate":
        raise InputError("`--space penultimate` works with --data/--train-data arrays; image folders use the image view.")
    if args.train_images is None:
        raise InputError("`--train-images` is needed with `--images` (the training images to compare with).")
    choice = pipeline_from_options(args, [args.model] if args.model else [], required=True)
    pipeline = choice.pipeline
    classes = class_order(args.model, args.classes, name="--classes")
    features = []
    rules: dict[str, str] = {}
    scored_images: Any = None
    for option, path, with_model in (("--images", args.images, model), ("--train-images", args.train_images, None)):
        dataset = open_images(path, classes=classes, name=option)
        dataset, _ = check_images(dataset, skip_broken=args.skip_broken, progress=not args.quiet, name=option)
        dataset = dataclasses.replace(dataset, verify_content=args.verify_content)
        rules[option] = dataset.key_rule()
        if with_model is not None:
            check_model_classes(dataset, with_model.n_classes, model=str(args.model), name=option)
            scored_images = dataset
        features.append(folder_features(dataset, pipeline, model=with_model, model_key=_model_key(args, with_model),
                                        batch_size=args.image_batch, progress=not args.quiet, name=option,
                                        checkpoint_dir=checkpoints))
    (scored, y, predictions), (train, _, _) = features
    checkpoints.matched = "; ".join(f"{option} matched {KEY_RULES[rule]}" for option, rule in rules.items())
    options: dict[str, Any] = {"scored_name": "--images", "train_name": "--train-images", **_settings(args)}
    if predictions is not None:
        options.update(y_true=y, y_pred=predictions, n_classes=model.n_classes)
    result = image_leakage(scored, train, progress=not args.quiet, checkpoint_dir=checkpoints, **options)
    if model is not None and result.accuracy is not None:  # the pipeline the model's predictions went through
        recorded = recorded_image_accuracy(model, scored_images, choice)
        result.pipeline = choice.to_dict(result.accuracy.accuracy, recorded)
    return result


def run_leakage(args: argparse.Namespace) -> Any:
    """Handler of ``fitaudit leakage``."""
    if (args.data is None) == (args.images is None):
        raise InputError("give the scored data either as `--data` (.npz) or as `--images` (a folder or CSV).")
    from fitaudit.leakage.resume import Checkpoints

    if args.data is not None and args.train_data is None:
        raise InputError("`--train-data` is needed with `--data` (the training data to compare with).")
    if args.data is not None:
        refuse_unused(args, IMAGES_ONLY, "--images", "--data")
    elif args.train_data is not None:
        raise InputError("`--train-data` goes with `--data`; with `--images`, give the training images as `--train-images`.")
    else:
        refuse_table_options(args, "--images")
        check_int(args.image_batch, "--image-batch", minimum=1)
    model = _model(args)
    checkpoints = Checkpoints(args.checkpoint_dir)
    result = _on_arrays(args, model, checkpoints) if args.data is not None else _on_folders(args, model, checkpoints)
    said = checkpoints.summary()
    if said is not None:
        print(f"fitaudit leakage: {said}", file=sys.stderr)
    return result


def summary(result: Any) -> str:
    """The reading of the result and the nearest pairs as rows."""
    from fitaudit.report.first_questions import pair_rows
    from fitaudit.report.pipelines import pipeline_lines
    from fitaudit.report.verdicts import read, said_lines

    lines = [*said_lines(read(result)), *pipeline_lines(result.pipeline)]
    if result.n_near:
        header, rows = pair_rows(result, SHOWN_PAIRS)
        more = f" (nearest {SHOWN_PAIRS} of {result.n_near}; all in --json)" if result.n_near > SHOWN_PAIRS else ""
        lines += ["", f"Pairs{more}:", table(rows, header)]
    return "\n".join(lines)


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``fitaudit leakage`` to the command line."""
    parser = subparsers.add_parser(
        "leakage",
        parents=parents,
        **examples("fitaudit leakage --data test.npz --train-data train.npz",
                   "fitaudit leakage --data test.csv --train-data train.csv --label target --model clf.skops",
                   "fitaudit leakage --images val/ --train-images train/ --resize 64 --crop 64"),
        help="find scored examples with an exact or near twin in the training data",
        description=(
            "Exact duplicates (equal decoded content) and near duplicates (nearest neighbours in a feature "
            "space, within a threshold: for rows, a quantile of the training rows' distances to their "
            "nearest distinct training row; for images, a relative distance, the nearest training image "
            "at most 0.4 times as far as the nearest one of other content but one, by 8 x 8 views aligned "
            "over shifts of up to 3 pixels, by the pixels themselves aligned and re-lit, or by the JPEG "
            "lattice (a re-encoding's 8 x 8 block DCT coefficients are its source's, rounded to the "
            "quantisation table's multiples); each scored image also under the inverse of a horizontal flip "
            "(unless the training images are mirror-symmetric), of rescales by 0.8-1.25x and of rotations "
            "by 4 and 8 degrees, each pair naming its edit) between training and "
            "scored data, every pair listed (files, or rows in the table's own columns). The verdict compares the scored set's "
            "twins and copies with the training data's own (each training row against the others) by "
            "Fisher's exact tests, marks the closest pairs beyond what those repeats explain, and says what "
            "removing the twins does to the accuracy (with --model). It states the most an undetected leak "
            "could raise the accuracy: with --model, the largest leaked share the twin count allows (a 95% "
            "upper bound against the training data's own rate) times the room for gain (1 - the accuracy "
            "without the twins, at the lower end of its interval); without, the leaked share it detects with "
            "80% power. With --model it passes when there is no excess and that bound is at most a quarter "
            "of the accuracy interval's half-width; without a model, when both tests detect a 2% leak; "
            "otherwise it is inconclusive and says why. "
            "Copies of training examples in data that never repeats itself, and tables whose rows mostly "
            "repeat, are never a pass. Table columns that name rows (unique text, row numbers, dates as "
            "text) are left out and named; a column holding numbers in one file and text in the other is "
            "refused."
        ),
    )
    parser.add_argument("--data", help=option_help("--data", "the scored data: rows or images (m, C, H, W)"))
    add_table_options(parser)
    parser.add_argument("--train-data", help="training data, as --data, with the same features")
    parser.add_argument("--images", help=option_help("--images", "the scored images"))
    parser.add_argument("--train-images", help="training images: a folder or .csv, as --images")
    parser.add_argument("--model", help="model file or folder: adds the accuracy with and without twins, and "
                                        "bounds what a leak the check could miss does to it")
    parser.add_argument("--space", choices=("auto", "penultimate"), default="auto",
                        help="feature space: auto (image views or standardised rows) or penultimate "
                             "(a torch model's penultimate features; with --data)")
    parser.add_argument("--quantile", type=float, default=None,
                        help="threshold = this quantile of the training rows' distances to their nearest distinct "
                             "training row (default 0.005 for rows; images: a fixed relative distance of 0.4, "
                             "the nearest training image at most 0.4 times as far as the nearest one of other "
                             "content but one)")
    parser.add_argument("--threshold", type=float, help="a fixed threshold instead of the default one (images: on the "
                                                        "relative distance)")
    add_pipeline_options(parser, arrays=True)
    add_classes_option(parser)
    parser.add_argument("--skip-broken", action="store_true", help="leave out image files that fail to decode")
    add_verify_content(parser)
    parser.add_argument("--image-batch", type=int, default=IMAGES_ONLY["image_batch"][1], help="images decoded per batch")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="examples per model call (default: a memory-bounded chunk of a table for scikit-learn, "
                        "XGBoost and LightGBM models, 256 for the others)")
    add_device_option(parser)
    add_trust_options(parser)
    parser.add_argument("--checkpoint-dir", default=None,
                        help="keep finished blocks of the features and the search here (16-48 KB per image); "
                             "a rerun resumes from them")
    add_seed(parser, "the calibration subset")
    parser.set_defaults(handler=run_leakage, summary=summary)

