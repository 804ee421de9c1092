"""``fitaudit overfit``: is an image classifier independent of the dataset it is scored on?

Werpachowski, Gyorgy, Szepesvari, NeurIPS 2019, Sec. 3 and 5: the pairwise
test (Test B) with a translational AEG, the confidence-interval test (Test A)
for comparison, and, with ``--models``, the N-model test (Test C) over
several training runs of the same procedure on the same data.

Data, one of:

* ``--images``: a folder ``root/<class>/<image>`` (classes sorted, or in the
  order the model's metadata names them) or a CSV of ``path,label``, JPEG
  or PNG, evaluated through the standard pipeline ``--resize R --crop C
  [--mean .. --std ..]`` (or the pipeline the model file records); the
  translational AEG moves the crop window inside the centre ``C + 2P``
  canvas, ``P = floor((R - C) / 2)``, default ``--eps floor(P / 3)``
  (ImageNet's 256/224: P = 16, eps = 5, the paper's setting). Every file is
  checked before the run; broken files are listed, or left out and counted
  with ``--skip-broken``. Images are decoded and scored batch by batch
  (:func:`fitaudit.overfit.images.overfit_test_images`);
* ``--data``: a ``.npz`` archive with ``x``, canvases of shape
  ``(m, C, H + 2P, W + 2P)`` in [0, 1] whose centre ``H x W`` crops are the
  images the model classifies, ``P`` = ``--margin``, and ``y``, integer labels.

The model files are read with :func:`fitaudit.models.load_model` (ONNX,
safetensors + config folder, skops; never pickle; a user's own architecture
file only with ``--trust-code``). The result type is
:class:`fitaudit.overfit.runs.OverfitCommandResult`.

With the model's training data (``--train-images`` beside ``--images``,
``--train-data`` beside ``--data``), the same test runs on them too, as the
audit's control of the test's power: a pass on the scored data stands only
where the training data are rejected (``control_rejected``), and is
``inconclusive`` (``control_not_rejected``) where even they are not, as for
a model trained on random crops, whose shifts lie inside its augmentation
(:func:`fitaudit.overfit.decision.command_verdict`).

The test is valid only under (G3), translation-invariant image densities;
not for centred datasets such as MNIST or CIFAR-10.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from fitaudit._errors import InputError
from fitaudit._validation import check_float, check_int, check_labels
from fitaudit.cli._common import (
    DECODE_THREADS,
    SIZE_OPTIONS,
    USER_GUIDE,
    add_classes_option,
    add_dask_option,
    add_device_option,
    add_pipeline_options,
    add_seed,
    add_verify_content,
    data_file,
    examples,
    normalisation_from_options,
    option_help,
    pipeline_from_options,
    probe_crop,
    probe_models,
    refuse_unused,
    table,
)
from fitaudit.overfit.aeg import DENSITY_WARNING, VARIANTS

if TYPE_CHECKING:  # the tests' modules import scipy.stats: loaded when the command runs, not for --help
    from fitaudit.overfit.one_model import OverfitTestResult
    from fitaudit.overfit.runs import OverfitCommandResult


#: options that apply to --images only, with their defaults: set with --data, they would do nothing
IMAGES_ONLY: dict[str, tuple[str, Any]] = {
    **SIZE_OPTIONS, "classes": ("--classes", None), "train_images": ("--train-images", None), "image_batch": ("--image-batch", 64), "decode_threads": ("--decode-threads", DECODE_THREADS), "skip_broken": ("--skip-broken", False),
    "shards": ("--shards", 1), "n_jobs": ("--n-jobs", None), "dask_scheduler": ("--dask-scheduler", None), "checkpoint_dir": ("--checkpoint-dir", None),
    "verify_content": ("--verify-content", None),
}


def check_options_apply(args: argparse.Namespace) -> None:
    """Options of the other kind of data are refused: ``--images`` options with ``--data``, ``--margin`` and
    ``--train-data`` with ``--images``; the training data go with one model."""
    if args.images is not None and args.margin is not None:
        raise InputError("`--margin` goes with `--data`; with `--images` the margin is P = floor((R - C) / 2).")
    if args.images is not None and args.train_data is not None:
        raise InputError("`--train-data` goes with `--data`; with `--images`, give the training images as "
                         "`--train-images` (an image folder or CSV).")
    if args.data is not None:
        refuse_unused(args, IMAGES_ONLY, "--images", "--data")
    given = "--train-images" if args.train_images is not None else "--train-data" if args.train_data is not None else None
    if given and args.models:
        raise InputError(f"`{given}` goes with one `--model`: the control on the training data is the one-model "
                         "test's; run the N-model test (`--models`) without it.")


def check_margin(eps: int, margin: int, stride: int = 1) -> None:
    """``--margin`` leaves room for shifts up to 3 eps steps of ``--stride`` pixels (h_g looks that far)."""
    eps = check_int(eps, "--eps", minimum=1)
    margin = check_int(margin, "--margin", minimum=0)
    stride = check_int(stride, "--stride", minimum=1)
    step = 3 * stride
    if margin >= step * eps:
        return
    if margin >= step:
        advice = f"use --eps {margin // step} or canvases with a larger margin"
    elif stride == 1:
        advice = "the canvases need at least 3 spare pixels per side even for --eps 1"
    else:
        advice = (f"at `--stride` {stride} the canvases need at least {step} spare pixels per side even for --eps 1"
                  + (f"; use --stride <= {margin // 3}" if margin >= 3 else ""))
    times = "3 * `--eps`" if stride == 1 else "3 * `--eps` * `--stride`"
    raise InputError(
        f"`--margin` must be at least {times} = {step * eps} spare pixels per side; got {margin} ({advice})."
    )


def load_runs(args: argparse.Namespace, paths: list[str]) -> list[Any]:
    """Every model file of the command, loaded safely."""
    from fitaudit.models import load_model

    return [
        load_model(
            path,
            trust_torchscript=args.trust_torchscript,
            trust_code=args.trust_code,
            batch_size=args.batch_size,
            device=args.device,
            name="--model" if i == 0 else "--models",
        )
        for i, path in enumerate(paths)
    ]


def run_on_images(
    args: argparse.Namespace, paths: list[str], delta: float, notes: list[str]
) -> OverfitCommandResult:
    """``fitaudit overfit --images``: the streamed test on an image folder or CSV."""
    from fitaudit.data.images import KEY_RULES, check_images, check_model_classes, open_images
    from fitaudit.models.fingerprint import model_fingerprint
    from fitaudit.models.io import runs_class_order
    from fitaudit.overfit.images import overfit_test_images
    from fitaudit.overfit.runs import OverfitCommandResult, model_runs

    for option, value in (("--image-batch", args.image_batch), ("--decode-threads", args.decode_threads), ("--shards", args.shards)):
        check_int(value, option, minimum=1)
    choice = pipeline_from_options(args, paths, required=True)
    pipeline = choice.pipeline
    eps = pipeline.check_eps(args.eps, args.stride)
    order = runs_class_order(paths, args.classes, name="--classes")
    dataset = open_images(args.images, classes=order, name="--images")
    dataset, broken = check_images(
        dataset, skip_broken=args.skip_broken, decode_threads=args.decode_threads, progress=not args.quiet
    )
    dataset = dataclasses.replace(dataset, verify_content=args.verify_content)
    if args.checkpoint_dir is not None:
        notes = [*notes, f"batches kept in --checkpoint-dir are matched to the image files {KEY_RULES[dataset.key_rule()]}"]
    models = load_runs(args, paths)
    for path, model in zip(paths, probe_crop(paths, models, pipeline)):
        check_model_classes(dataset, model.n_classes, model=path)
    parallel = args.n_jobs not in (None, 1)
    run = overfit_test_images(
        paths if parallel else models, dataset, pipeline, eps=eps, variant=args.variant, delta=delta,
        batch_size=args.image_batch, model_batch_size=args.batch_size, decode_threads=args.decode_threads,
        skip_broken=args.skip_broken, n_shards=args.shards, n_jobs=args.n_jobs,
        load={"trust_torchscript": args.trust_torchscript, "trust_code": args.trust_code,
              "batch_size": args.batch_size, "device": args.device},
        random_state=args.seed, checkpoint_dir=args.checkpoint_dir, progress=not args.quiet,
        model_keys=[model_fingerprint(path) for path in paths] if args.checkpoint_dir else None,
        stride=args.stride, mirror=args.mirror,
    )
    test = run.test
    left_out = [f"{b.path} ({b.reason})" for b in [*broken, *run.broken]]
    if left_out:
        notes = [*notes, f"{len(left_out)} broken image files left out (--skip-broken)"]
    runs = model_runs(paths, test)
    from fitaudit.auditing.images import recorded_image_accuracy
    from fitaudit.models.inference import run_record

    # the first model's accuracy under the pipeline it records, beside this one's (None when they agree)
    recorded = recorded_image_accuracy(models[0], dataset, choice)
    control = None
    if args.train_images is not None:  # the same test on the training images, after the scored ones
        training, _ = check_images(open_images(args.train_images, classes=order, name="--train-images"),
                                   skip_broken=args.skip_broken, decode_threads=args.decode_threads, progress=not args.quiet)
        check_model_classes(training, models[0].n_classes, model=paths[0], name="--train-images")
        control = cast("OverfitTestResult", overfit_test_images(  # one model: the one-model test
            paths[:1] if parallel else models[:1], dataclasses.replace(training, verify_content=args.verify_content),
            pipeline, eps=eps, variant=args.variant, delta=delta, batch_size=args.image_batch,
            model_batch_size=args.batch_size, decode_threads=args.decode_threads, skip_broken=args.skip_broken,
            n_shards=args.shards, n_jobs=args.n_jobs,
            load={"trust_torchscript": args.trust_torchscript, "trust_code": args.trust_code,
                  "batch_size": args.batch_size, "device": args.device},
            random_state=args.seed, progress=not args.quiet,
            checkpoint_dir=None if args.checkpoint_dir is None else Path(args.checkpoint_dir) / "train-images",
            model_keys=[model_fingerprint(paths[0])] if args.checkpoint_dir else None,
            stride=args.stride, mirror=args.mirror,
        ).test)
    return OverfitCommandResult(
        pvalue=test.pvalue, reject=test.reject, test=test, runs=runs,
        variant=args.variant, eps=eps, margin=pipeline.margin, m=run.n_scored, n_models=len(paths),
        warning=DENSITY_WARNING, notes=notes, source=str(args.images),
        pipeline=pipeline.to_dict(), broken=left_out,
        pipeline_choice=choice.to_dict(1.0 - runs[0].risk_plain, recorded),
        inference=None if parallel else run_record(models[0]),
        control=control, control_source="" if control is None else str(args.train_images),
        stride=args.stride, mirror=args.mirror,
    )


def run_on_canvases(
    args: argparse.Namespace, paths: list[str], delta: float, notes: list[str]
) -> OverfitCommandResult:
    """``fitaudit overfit --data``: canvases with a spare margin from an .npz archive."""
    from fitaudit.data.io import load_npz, read_margin
    from fitaudit.models.inference import run_record
    from fitaudit.overfit.mirror import MirrorTranslationAEG
    from fitaudit.overfit.nmodel import NModelTestResult, n_model_test
    from fitaudit.overfit.one_model import overfit_test
    from fitaudit.overfit.runs import OverfitCommandResult, model_runs
    from fitaudit.overfit.translation import TranslationAEG

    if args.margin is None or args.eps is None:
        raise InputError("`--margin` and `--eps` are needed with --data (the canvases' spare pixels per side, the shift).")
    check_margin(args.eps, args.margin, args.stride)
    aeg = (MirrorTranslationAEG if args.mirror else TranslationAEG)(
        eps=args.eps,
        margin=args.margin,
        variant=args.variant,
        batch_size=args.batch_size,
        progress=not args.quiet,
        random_state=args.seed,
        stride=args.stride,
    )
    canvases, y = load_npz(data_file(args.data), image=True, name="--data")
    choice = normalisation_from_options(args, paths, canvases)  # the canvases' pixel values, normalised as recorded
    native = load_runs(args, paths)
    models = [choice.classifier(model) for model in native]
    recorded = read_margin(args.data, name="--data")
    if recorded and recorded != args.margin:  # the crops would not be the images the file describes
        raise InputError(f"`--margin` {args.margin} contradicts the margin {recorded} that `--data` records "
                         f"(its array 'margin'); use --margin {recorded}.")
    probe = aeg.model_inputs(canvases[:1])
    what = f"`--margin` {aeg.margin} makes the images {probe.shape[2]}x{probe.shape[3]} crops of the canvases"
    for path, model in zip(paths, probe_models(paths, models, probe, what)):
        check_labels(y, f"--data['y'] for model {path}", n_classes=model.n_classes)
    test: OverfitTestResult | NModelTestResult
    if len(models) == 1:
        test = overfit_test(models[0], canvases, y, aeg, delta=delta)
    else:
        test = n_model_test(models, canvases, y, aeg, delta=delta)
    control = None
    if args.train_data is not None:  # the same test on the training canvases, after the scored ones
        seen, seen_y = load_npz(data_file(args.train_data, "--train-data"), image=True, name="--train-data")
        recorded = read_margin(args.train_data, name="--train-data")
        if recorded and recorded != args.margin:
            raise InputError(f"`--margin` {args.margin} contradicts the margin {recorded} that `--train-data` "
                             f"records (its array 'margin'); the training canvases need the scored ones' margin.")
        if seen.shape[1:] != canvases.shape[1:]:
            raise InputError(f"`--train-data` holds canvases of shape {seen.shape[1:]}, but `--data` holds "
                             f"{canvases.shape[1:]}: the training canvases must be made like the scored ones.")
        check_labels(seen_y, f"--train-data['y'] for model {paths[0]}", n_classes=models[0].n_classes)
        control = overfit_test(models[0], seen, seen_y, aeg, delta=delta)
    runs = model_runs(paths, test)
    return OverfitCommandResult(
        pvalue=test.pvalue,
        reject=test.reject,
        test=test,
        runs=runs,
        variant=aeg.variant,
        eps=aeg.eps,
        margin=aeg.margin,
        m=len(y),
        n_models=len(models),
        warning=DENSITY_WARNING,
        notes=notes,
        source=str(args.data),
        pipeline_choice=choice.to_dict(1.0 - runs[0].risk_plain, choice.recorded_accuracy(native[0], aeg.model_inputs(canvases), y)),
        inference=run_record(native[0]),
        control=control, control_source="" if control is None else str(args.train_data),
        stride=aeg.stride, mirror=aeg.mirror,
    )


def run_overfit_command(args: argparse.Namespace) -> OverfitCommandResult:
    """Handler of ``fitaudit overfit`` (torch models wrapped under ``--precision``)."""
    from fitaudit.models.inference.settings import using_precision

    with using_precision(args.precision):
        return _run_overfit(args)


def _run_overfit(args: argparse.Namespace) -> OverfitCommandResult:
    from fitaudit.overfit.runs import check_distinct_runs, training_data_notes

    delta = check_float(args.delta, "--delta", low=0.0, high=0.5, low_inclusive=False, high_inclusive=False)
    check_int(args.stride, "--stride", minimum=1)
    if (args.data is None) == (args.images is None):
        raise InputError("give one of `--images` (an image folder or CSV) or `--data` (an .npz of canvases).")
    check_options_apply(args)
    paths = [str(args.model), *(str(p) for p in args.models or [])]
    notes: list[str] = []
    if len(paths) > 1:
        check_distinct_runs(paths)
        notes = training_data_notes(paths)
    if args.images is not None:
        return run_on_images(args, paths, delta, notes)
    return run_on_canvases(args, paths, delta, notes)


def summary(result: OverfitCommandResult) -> str:
    """Verdict, the per-model numbers and the validity condition."""
    from fitaudit.report.inference import inference_line
    from fitaudit.report.overfit_words import g3_line
    from fitaudit.report.pipelines import pipeline_lines
    from fitaudit.report.verdicts import read

    reading = read(result)  # its headline leads with the verdict's word (Passes, Fails, Inconclusive): said once
    verdict = reading.headline + (f"\n{reading.details}" if reading.details else "")
    rows = [
        [
            run.model, f"{run.risk_plain:.4f}", f"{run.risk_adversarial:.4f}", f"{run.success_rate:.3f}",
            f"{run.pvalue:.3g}", f"{run.ci_pvalue:.3g}",
        ]
        for run in result.runs
    ]
    lines = [verdict, ""]
    if result.pipeline is not None:  # the pipeline itself is said once, by pipeline_lines
        lines.append(f"Images: {result.source}; m = {result.m} images"
                     + (f", {len(result.broken)} broken files left out." if result.broken else "."))
    else:
        lines.append(f"Canvases: {result.source}; m = {result.m} images.")
    lines += pipeline_lines(result.pipeline_choice, settings=result.pipeline)
    lines += [
        f"Translational AEG {result.variant!r}, eps = {result.eps}"
        + (f", stride = {result.stride} px (shifts up to {result.eps * result.stride} px)" if result.stride > 1 else "")
        + (", with mirror images" if result.mirror else "")
        + f", margin = {result.margin}, {result.runs[0].evaluations_per_example:.0f} model evaluations per example:",
        table(rows, ["model", "error R_S", "adv. R_g", "success", "pairwise p", "CI p"]),
        "",
        g3_line(result.test.g3, USER_GUIDE),
    ]
    if result.control is not None:
        control = result.control
        lines.append(f"Control on the training data ({result.control_source}; m = {control.m}, error R_S "
                     f"{control.risk_plain:.4f}, adv. R_g {control.risk_adversarial:.4f}): "
                     f"{read(control, role='train').sentence}")
    ran = inference_line(result.inference)
    lines += [ran] if ran else []
    lines += [f"Note: {note}." for note in result.notes]
    return "\n".join(lines)


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``fitaudit overfit`` to the command line."""
    parser = subparsers.add_parser(
        "overfit",
        parents=parents,
        **examples("fitaudit overfit --model net.onnx --images val/ --resize 40 --crop 32",
                   "fitaudit overfit --model net.onnx --images val/ --train-images train/ --resize 56 --crop 32 "
                   "--stride 4 --mirror",
                   "fitaudit overfit --model run1/model --models run2/model run3/model --data canvases.npz "
                   "--margin 6 --eps 2"),
        help="test whether an image classifier is independent of its test set",
        description=(
            "Overfitting test of Werpachowski et al. (NeurIPS 2019) with translational "
            "adversarial examples, on an image folder through the evaluation pipeline (resize R, "
            "centre crop C; the AEG moves the crop window, P = floor((R - C) / 2) spare pixels per "
            "side) or on canvases x of shape (m, C, H+2P, W+2P) in [0, 1] from an .npz. " + DENSITY_WARNING
            + f" How to read the numbers: {USER_GUIDE}."
        ),
    )
    parser.add_argument(
        "--model", required=True,
        help="model file: .onnx, safetensors + config.json folder (a user's own architecture needs "
        "--trust-code), or .skops",
    )
    data = parser.add_argument_group("data (one of)")
    data.add_argument("--images", help=option_help("--images"))
    data.add_argument("--data", help=option_help("--data", "here an .npz only: canvases x of shape (m, C, H+2P, W+2P)"))
    control = parser.add_argument_group(
        "the model's training data (the control: the same test must reject them for a pass to stand)"
    )
    control.add_argument(
        "--train-images", help="with --images: the image folder (or CSV) the model was trained on"
    )
    control.add_argument(
        "--train-data", help="with --data: the .npz of canvases the model was trained on, made as --data"
    )
    pipeline = parser.add_argument_group(
        "evaluation pipeline (--images; default: the one the model file records)"
    )
    add_pipeline_options(pipeline, arrays=True)  # ImageNet: --resize 256 --crop 224
    add_classes_option(pipeline)
    parser.add_argument(
        "--eps", type=int,
        help="largest shift in pixels per axis (>= 1); with --images default floor(P / 3), "
        "P = floor((R - C) / 2)",
    )
    parser.add_argument(
        "--stride", type=int, default=1,
        help="pixels per step of the AEG's shifts: shifts of stride, 2 stride, ... up to eps * stride per axis "
        "(default 1, the paper's shifts); a stride beyond a random-crop augmentation's range lets the test see a "
        "model trained on random crops; needs P >= 3 * eps * stride (with --images eps defaults to "
        "floor(P / (3 * stride)))",
    )
    parser.add_argument(
        "--mirror", action="store_true",
        help="the AEG also tries the horizontal mirror image of every shift (MirrorTranslationAEG); valid only for "
        "mirror-symmetric images, which the G3 check tests with the flip (a verdict is inconclusive where it fails)",
    )
    parser.add_argument(
        "--variant",
        choices=VARIANTS,
        default="strongest",
        help="translational AEG: strongest, nearest, random or random2 (default strongest)",
    )
    parser.add_argument(
        "--margin", type=int, help="with --data: spare pixels P per side of the canvases (>= 3 * eps)"
    )
    parser.add_argument(
        "--models",
        nargs="+",
        metavar="M",
        help="further runs of the same training on the same data: the N-model test over all runs",
    )
    parser.add_argument("--delta", type=float, default=0.05, help="level of the tests (default 0.05)")
    parser.add_argument("--batch-size", type=int, default=256, help="images per model call (default 256)")
    parser.add_argument(
        "--image-batch", type=int, default=IMAGES_ONLY["image_batch"][1], help="with --images: images decoded at a time (default 64)"
    )
    parser.add_argument("--decode-threads", type=int, default=IMAGES_ONLY["decode_threads"][1], help=f"with --images: threads that decode the image files, the library's decode_threads (default: this machine's cores, {DECODE_THREADS})")
    parser.add_argument(
        "--skip-broken", action="store_true",
        help="with --images: leave out files that are not readable JPEG/PNG images (counted in the result)",
    )
    parser.add_argument(
        "--shards", type=int, default=IMAGES_ONLY["shards"][1], help="with --images: split the images into this many shards"
    )
    parser.add_argument(
        "--n-jobs", type=int, default=None,
        help="with --images: shards run in parallel (joblib; a Dask cluster inside its parallel_config)",
    )
    parser.add_argument(
        "--checkpoint-dir", default=None,
        help="with --images: keep each batch's results there; a rerun resumes after the last finished batch",
    )
    add_verify_content(parser)
    add_device_option(parser)
    add_dask_option(parser, "the shards (with --images)")
    parser.add_argument(
        "--precision", choices=["auto", "fp32"], default="auto",
        help="torch models on a GPU: auto (default) may run TF32, bf16 or fp16 autocast when faster and its predicted "
             "classes agree with fp32's on >= 99.5%% of a calibration batch (recorded in the result); fp32 forces exact "
             "fp32. On the CPU both are fp32",
    )
    parser.add_argument(
        "--trust-torchscript",
        action="store_true",
        help="allow loading TorchScript files (runs code stored in them; only for files you trust)",
    )
    parser.add_argument(
        "--trust-code",
        action="store_true",
        help="allow a model folder whose config.json names your own architecture file (runs that file)",
    )
    add_seed(parser, "the random and random2 AEGs' draws")
    parser.set_defaults(handler=run_overfit_command, summary=summary)
