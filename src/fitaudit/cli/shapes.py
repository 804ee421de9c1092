"""``fitaudit shapes``: look at, render, build datasets from and train on the Shapes world.

Subcommands::

    fitaudit shapes sheet   --out sheet.png           classes x factor sweeps
    fitaudit shapes render  --class torus --factor camera_elevation=60 --out torus.png
    fitaudit shapes dataset --objects-per-class 100 --renders-per-object 10 --out train.npz
    fitaudit shapes train   --architecture shapes_resnet --out runs/resnet

``--range NAME=LOW,HIGH`` narrows a factor (e.g. ``camera_elevation=-30,30``
to plant a weakness); ``--free-position`` writes canvases with a margin for
the translational overfitting test. ``shapes train`` draws its data from
``--data-seed`` and trains with ``--seed``, so runs with the same data seed
and different training seeds are runs of one training on the same data (the
N-model test of ``fitaudit overfit --models``); each model's
``config.json`` records a fingerprint of its training set. With ``--json``
each prints a JSON summary on stdout.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit._validation import check_int, check_memory
from fitaudit.checkpoint import atomic_save_npy
from fitaudit.cli._common import (
    add_device_option,
    examples,
    option_help,
    out_file,
    out_folder,
    seed_option,
)
from fitaudit.data.shapes.classes import CLASS_NAMES
from fitaudit.data.shapes.factors import FactorSpace, shapes_factor_space


def _parse_pairs(items: list[str] | None, option: str) -> dict[str, str]:
    out = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise InputError(f"`{option}` must look like NAME=VALUE; got {item!r}.")
        if name.strip() in out:
            raise InputError(f"`{option}` sets {name.strip()!r} twice; give each factor once.")
        out[name.strip()] = value.strip()
    return out


def _number(text: str, option: str) -> float:
    try:
        return float(text)
    except ValueError as exc:
        raise InputError(f"`{option}` needs numbers; got {text!r}.") from exc


def factor_space_from_args(ranges: list[str] | None) -> FactorSpace:
    """The world's factor space narrowed by ``--range NAME=LOW,HIGH`` options."""
    narrowed = {}
    for name, value in _parse_pairs(ranges, "--range").items():
        bounds = value.split(",")
        if len(bounds) != 2:
            raise InputError(f"`--range` {name} must be LOW,HIGH; got {value!r}.")
        narrowed[name] = (_number(bounds[0], "--range"), _number(bounds[1], "--range"))
    return shapes_factor_space().restrict(**narrowed)


def _classes(text: str | None) -> list[str] | None:
    return None if text is None else [c.strip() for c in text.split(",") if c.strip()]


def _sheet(args: argparse.Namespace) -> dict[str, Any]:
    from fitaudit.report.shapes import write_contact_sheet

    return write_contact_sheet(
        out_file(args.out),
        classes=_classes(args.classes),
        n_random=args.n_random,
        image_size=args.image_size,
        world_seed=args.world_seed,
        random_state=args.seed,
    )


def _render(args: argparse.Namespace) -> dict[str, Any]:
    from fitaudit.data.shapes.instances import check_classes, instances_from_ids
    from fitaudit.data.shapes.render import render

    if args.classes is not None:
        raise InputError("`--classes` does nothing for `shapes render`: name the object's class with --class.")
    class_ids = check_classes([args.shape_class])
    values = {k: _number(v, "--factor") for k, v in _parse_pairs(args.factor, "--factor").items()}
    space = shapes_factor_space()
    factors = space.to_array(values)
    instances = instances_from_ids([args.instance_id], class_ids, world_seed=args.world_seed)
    image = render(instances, factors, image_size=args.image_size)[0]
    out = out_file(args.out)
    if out.suffix.lower() == ".png":
        from fitaudit.report.images import save_image

        save_image(image, out)
    elif out.suffix == ".npy":
        atomic_save_npy(out, image)
    else:
        raise InputError(f"`--out` must end in .png or .npy; got {args.out!r}.")
    return {
        "path": str(out),
        "class": args.shape_class,
        "instance_id": args.instance_id,
        "factors": dict(zip(space.names, factors[0].tolist())),
        "image_shape": list(image.shape),
    }


def _layout(args: argparse.Namespace) -> Any:
    """The free-position layout, or None; layout options without ``--free-position`` are an error."""
    from fitaudit.data.shapes.datasets import FreePositionLayout

    if not args.free_position:
        given = [
            option for option, value in (("--wrap", args.wrap), ("--margin", args.margin), ("--object-size", args.object_size))
            if value not in (None, False)
        ]
        if given:
            raise InputError(
                f"`{given[0]}` only applies to free-position canvases: add --free-position "
                "(or drop " + ", ".join(given) + ")."
            )
        return None
    margin = 3 if args.margin is None else args.margin
    object_size = args.object_size if args.object_size is not None else (5 * args.image_size) // 8
    return FreePositionLayout(crop_size=args.image_size, margin=margin, object_size=object_size, wrap=args.wrap)


def _dataset(args: argparse.Namespace) -> dict[str, Any]:
    from fitaudit.data.shapes.datasets import make_dataset, make_free_position_dataset

    out = out_file(args.out)  # before the renders
    layout = _layout(args)
    _check_dataset_size(args, layout)
    common = {
        "split": args.split,
        "classes": _classes(args.classes),
        "factor_space": factor_space_from_args(args.range),
        "world_seed": args.world_seed,
        "random_state": args.seed,
        "progress": not args.quiet,
    }
    if layout is not None:
        data = make_free_position_dataset(args.objects_per_class, args.renders_per_object, layout=layout, **common)
    else:
        data = make_dataset(args.objects_per_class, args.renders_per_object, image_size=args.image_size, **common)
    path = data.save_npz(out)
    return {"path": str(path), **data.summary()}


def _check_dataset_size(args: argparse.Namespace, layout: Any) -> None:
    """Refuse counts whose images (float32, 3 channels, held at once) would not fit in memory, before rendering."""
    objects = check_int(args.objects_per_class, "--objects-per-class", minimum=1)
    renders = check_int(args.renders_per_object, "--renders-per-object", minimum=1)
    side = check_int(args.image_size, "--image-size", minimum=1) if layout is None else layout.canvas_size
    n_classes = len(_classes(args.classes) or CLASS_NAMES)
    images = objects * renders * n_classes
    check_memory(4 * 3 * side * side * images,
                 f"`--objects-per-class` {objects} x `--renders-per-object` {renders} x {n_classes} classes = "
                 f"{images:,} images of 3 x {side} x {side}", fix="ask for fewer")


def _train(args: argparse.Namespace) -> dict[str, Any]:
    """``shapes train`` on ``--threads`` torch threads, the process's count given back after."""
    from fitaudit.models.training import torch_threads

    import_optional("torch", "fitaudit shapes train")
    with torch_threads(check_int(args.threads, "--threads", minimum=1)):
        return _train_on_threads(args)


def _train_on_threads(args: argparse.Namespace) -> dict[str, Any]:
    from fitaudit.checkpoint import fingerprint
    from fitaudit.data.shapes.datasets import make_splits
    from fitaudit.models.torch_ops import accuracy
    from fitaudit.models.training import train_classifier

    if args.architecture not in ("shapes_alexnet", "shapes_resnet"):
        raise InputError(f"`--architecture` must be shapes_alexnet or shapes_resnet; got {args.architecture!r}.")
    layout = _layout(args)
    folder = out_folder(args.out)
    for option, value in (("--objects-per-class", args.objects_per_class), ("--renders-per-object", args.renders_per_object),
                          ("--validation-objects-per-class", args.validation_objects_per_class),
                          ("--test-objects-per-class", args.test_objects_per_class),
                          ("--eval-renders-per-object", args.eval_renders_per_object)):
        check_int(value, option, minimum=1)  # each named: the data sets name them all `n_objects_per_class`
    side = check_int(args.image_size, "--image-size", minimum=1) if layout is None else layout.canvas_size
    n_classes = len(_classes(args.classes) or CLASS_NAMES)
    images = n_classes * (args.objects_per_class * args.renders_per_object + args.eval_renders_per_object
                          * (args.validation_objects_per_class + args.test_objects_per_class))
    check_memory(4 * 3 * side * side * images,
                 f"`--objects-per-class`, `--renders-per-object` and the validation and test counts ask for "
                 f"{images:,} images of 3 x {side} x {side}", fix="ask for fewer")
    started = time.perf_counter()
    splits = make_splits(
        {"train": args.objects_per_class, "validation": args.validation_objects_per_class, "test": args.test_objects_per_class},
        {"train": args.renders_per_object, "validation": args.eval_renders_per_object, "test": args.eval_renders_per_object},
        factor_spaces={"train": factor_space_from_args(args.range)},
        classes=_classes(args.classes),
        world_seed=args.world_seed,
        random_state=args.data_seed,
        progress=not args.quiet,
        **({"layout": layout} if layout is not None else {"image_size": args.image_size}),
    )
    render_seconds = time.perf_counter() - started
    train, val, test = splits["train"], splits["validation"], splits["test"]
    data_fingerprint = fingerprint(train.images, train.labels)[:16]
    kwargs = {"width": args.width} if args.width is not None else {}
    model, result = train_classifier(
        train.images,
        train.labels,
        architecture=args.architecture,
        kwargs=kwargs,
        x_val=val.images,
        y_val=val.labels,
        epochs=args.epochs,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        checkpoint_dir=folder,
        device=args.device,
        metadata={
            "world": "shapes",
            "class_names": train.class_names,
            "world_seed": args.world_seed,
            "data_seed": args.data_seed,
            "seed": args.seed,
            "data_fingerprint": data_fingerprint,
            "train_factor_ranges": train.summary()["factor_ranges"],
            "renders_per_object": args.renders_per_object,
            "objects_per_class": args.objects_per_class,
        },
        random_state=args.seed,
        progress=not args.quiet,
    )
    saved = {}
    if layout is not None:  # the canvases, for `fitaudit overfit --data` on the training and test sets
        saved = {f"{name}_data": str(data.save_npz(folder / f"{name}.npz")) for name, data in (("train", train), ("test", test))}
    return {
        **result.to_dict(),
        **saved,
        "test_accuracy": accuracy(model, test.images, test.labels),
        "test_images": len(test),
        "train_images": len(train),
        "data_seed": args.data_seed,
        "seed": args.seed,
        "data_fingerprint": data_fingerprint,
        "render_seconds": render_seconds,
    }


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "es" if noun.endswith("s") else "s")


def _sheet_summary(result: dict[str, Any]) -> str:
    return (
        f"Wrote a contact sheet of {_count(len(result['rows']), 'class')} x {_count(len(result['columns']), 'column')} "
        f"({result['image_size']} px images) to {result['path']}."
    )


def _render_summary(result: dict[str, Any]) -> str:
    factors = ", ".join(f"{name}={value:g}" for name, value in result["factors"].items())
    shape = "x".join(map(str, result["image_shape"]))
    return f"Wrote {result['class']} #{result['instance_id']} ({shape}) to {result['path']}.\nFactors: {factors}."


def _dataset_summary(result: dict[str, Any]) -> str:
    counts = ", ".join(f"{name} {count}" for name, count in zip(result["class_names"], result["class_counts"]))
    shape = "x".join(map(str, result.get("canvas_shape") or result["image_shape"]))
    kind = "canvases" if result.get("canvas_shape") else "images"
    return (
        f"Wrote {result['n_images']} {kind} of shape {shape} ({result['n_objects']} objects x "
        f"{result['renders_per_object']} renders, {result['split']} split) to {result['path']}.\nPer class: {counts}."
    )


def _train_summary(result: dict[str, Any]) -> str:
    lines = [
        f"Held-out accuracy {result['test_accuracy']:.3f} on {result['test_images']} images of unseen objects "
        f"({result['architecture']}, {result['n_parameters']:,} parameters, {_count(result['epochs'], 'epoch')} on "
        f"{result['train_images']} images, {result['train_seconds']:.0f} s).",
    ]
    if result["validation_accuracy"] is not None:
        lines.append(f"Validation accuracy {result['validation_accuracy']:.3f}.")
    lines.append(
        f"Model: {result['model_dir']} (data seed {result['data_seed']}, training seed {result['seed']}, "
        f"{_count(result['torch_threads'], 'torch thread')}, training data {result['data_fingerprint']})."
    )
    if "train_data" in result:
        lines.append(f"Canvases for fitaudit overfit: {result['train_data']}, {result['test_data']}.")
    return "\n".join(lines)


def _add_layout_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--free-position", action="store_true", help="canvases with a spare margin around each image (x is canvases)"
    )
    parser.add_argument("--margin", type=int, help="with --free-position: spare pixels per side (default 3)")
    parser.add_argument(
        "--object-size", type=int, help="with --free-position: object tile side (default 5/8 of the image)"
    )
    parser.add_argument(
        "--wrap", action="store_true", help="with --free-position: periodic canvas, so (G3) holds exactly"
    )


def _add_world_options(parser: argparse.ArgumentParser, *, image_size: int, seed_help: str) -> None:
    parser.add_argument("--classes", help=f"comma-separated subset of: {', '.join(CLASS_NAMES)}")
    parser.add_argument(
        "--image-size", type=int, default=image_size, help=f"image side in pixels (default {image_size})"
    )
    parser.add_argument("--world-seed", type=int, default=0, help="which world: the objects depend only on it (default 0)")
    parser.add_argument("--seed", type=seed_option, default=0, help=f"{seed_help} (default 0)")


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``fitaudit shapes`` and its subcommands."""
    shapes = subparsers.add_parser(
        "shapes",
        **examples("fitaudit shapes sheet --out sheet.png",
                   "fitaudit shapes dataset --objects-per-class 100 --out train.npz",
                   "fitaudit shapes train --architecture shapes_resnet --out runs/resnet"),
        help="the built-in Shapes world: contact sheet, renders, datasets, reference models",
        description="Look at, render, build datasets from and train reference CNNs on the built-in Shapes world.",
    )
    commands = shapes.add_subparsers(dest="shapes_command", metavar="SUBCOMMAND", parser_class=type(shapes), required=True)

    sheet = commands.add_parser("sheet", parents=parents, **examples(
        "fitaudit shapes sheet --out sheet.png", "fitaudit shapes sheet --out sheet.png --n-random 8 --image-size 96"), help="write a contact sheet PNG (classes x factor sweeps)")
    sheet.add_argument("--out", required=True, help=option_help("--out", "a .png file"))
    sheet.add_argument("--n-random", type=int, default=4, help="extra columns of random factors (default 4)")
    _add_world_options(sheet, image_size=64, seed_help="seed of the random columns")
    sheet.set_defaults(handler=_sheet, summary=_sheet_summary)

    one = commands.add_parser("render", parents=parents, **examples(
        "fitaudit shapes render --class torus --out torus.png",
        "fitaudit shapes render --class torus --factor camera_elevation=60 --out torus.png"), help="render one object under given factors")
    one.add_argument("--class", dest="shape_class", required=True, help=f"one of: {', '.join(CLASS_NAMES)}")
    one.add_argument("--instance-id", type=int, default=0, help="which object of the class (default 0)")
    one.add_argument(
        "--factor", action="append", metavar="NAME=VALUE", help="set a factor (repeatable); the others take defaults"
    )
    one.add_argument("--out", required=True, help=option_help("--out", "a .png or .npy file"))
    _add_world_options(one, image_size=32, seed_help="unused by render (kept for symmetry)")
    one.set_defaults(handler=_render, summary=_render_summary)

    dataset = commands.add_parser("dataset", parents=parents, **examples(
        "fitaudit shapes dataset --objects-per-class 100 --renders-per-object 10 --out train.npz",
        "fitaudit shapes dataset --objects-per-class 20 --split test --free-position --out test.npz"), help="render a dataset to .npz (x, y, provenance)")
    dataset.add_argument("--objects-per-class", type=int, required=True, help="distinct objects of each class")
    dataset.add_argument("--renders-per-object", type=int, default=10, help="renders of each object (default 10)")
    dataset.add_argument(
        "--split", default="train", choices=["train", "validation", "test"],
        help="which objects: splits never share an object (default train)",
    )
    dataset.add_argument("--range", action="append", metavar="NAME=LOW,HIGH", help="narrow a factor's range (repeatable)")
    _add_layout_options(dataset)
    dataset.add_argument("--out", required=True, help=option_help("--out", "an .npz file"))
    _add_world_options(dataset, image_size=32, seed_help="seed of the factor draws")
    dataset.set_defaults(handler=_dataset, summary=_dataset_summary)

    train = commands.add_parser("train", parents=parents, **examples(
        "fitaudit shapes train --out runs/resnet",
        "fitaudit shapes train --architecture shapes_alexnet --epochs 5 --out runs/alexnet"), help="train a reference CNN; report held-out accuracy")
    train.add_argument(
        "--architecture", default="shapes_resnet", help="shapes_alexnet or shapes_resnet (default shapes_resnet)"
    )
    train.add_argument("--width", type=int, help="base width of the network (default: the architecture's)")
    train.add_argument("--objects-per-class", type=int, default=60, help="training objects per class (default 60)")
    train.add_argument("--renders-per-object", type=int, default=10, help="renders of each training object (default 10)")
    train.add_argument(
        "--validation-objects-per-class", type=int, default=10, help="validation objects per class (default 10)"
    )
    train.add_argument("--test-objects-per-class", type=int, default=40, help="test objects per class (default 40)")
    train.add_argument(
        "--eval-renders-per-object", type=int, default=5, help="renders of each validation/test object (default 5)"
    )
    train.add_argument(
        "--range", action="append", metavar="NAME=LOW,HIGH", help="narrow a factor for training only (repeatable)"
    )
    train.add_argument("--epochs", type=int, default=12, help="training epochs (default 12)")
    train.add_argument("--batch-size", type=int, default=128, help="images per step (default 128)")
    train.add_argument("--learning-rate", type=float, default=2e-3, help="Adam's learning rate (default 0.002)")
    train.add_argument(
        "--threads", type=int, default=1, help="torch CPU threads (default 1: small nets gain little from more)"
    )
    _add_layout_options(train)
    train.add_argument(
        "--out", default="fitaudit-out/shapes-train",
        help=option_help("--out", "a folder: checkpoints (a rerun resumes), model/ and, with --free-position, "
                         "train.npz and test.npz canvases; default fitaudit-out/shapes-train"),
    )
    train.add_argument(
        "--data-seed", type=int, default=0,
        help="seed of the data's factor draws (default 0): keep it to train several runs on the same data",
    )
    _add_world_options(train, image_size=32, seed_help="seed of the training: initial weights, batch order")
    add_device_option(train)
    train.set_defaults(handler=_train, summary=_train_summary, out_is_folder=True)
