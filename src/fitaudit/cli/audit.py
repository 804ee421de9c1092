"""``fitaudit audit``: every instrument that applies to a model, one report.

Examples::

    fitaudit audit --model run/model --data run/test.npz --train-data run/train.npz
    fitaudit audit --model clf.skops --data test.npz --train-data train.npz --fail-on overfit,pmv
    fitaudit audit --model net.onnx --data canvases.npz --margin 6 --dask-scheduler tcp://10.0.0.5:8786

Writes ``OUT/report.html`` (self-contained) and ``OUT/audit.json``; finished
parts are kept in ``OUT/parts`` so an interrupted audit resumes. With
``--fail-on`` the exit code is 1 when a chosen verdict fails, is
inconclusive or could not be checked (for CI pipelines; see the user guide's
*Verdicts for scripts and CI*).
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path
from typing import Any

from fitaudit._errors import FitauditError, InputError
from fitaudit._names import CLI_OPTIONS
from fitaudit._validation import check_int
from fitaudit.cli._common import (
    SIZE_OPTIONS,
    add_classes_option,
    add_dask_option,
    add_device_option,
    add_pipeline_options,
    add_seed,
    add_table_options,
    add_trust_options,
    add_verify_content,
    examples,
    given_pipeline,
    option_help,
    parse_factors,
    refuse_table_options,
    refuse_unused,
    report_location,
    run_options,
)

#: what --fail-on accepts besides part ids
FAIL_ON_HELP = ("comma-separated instruments (overfit, examine, pgdl, pmv) or part ids (baseline, calibration, "
                "slices, labels, overfit-test, ...)")


class VerdictFailed(FitauditError):
    """A verdict named in ``--fail-on`` failed (exit code 1)."""


def _existing(path: str | None, option: str) -> str | None:
    if path is None:
        return None
    if not Path(path).exists():
        raise InputError(f"`{option}`: {path!r} does not exist.")
    return path


def _learner(path: str | None, *, trust_code: bool = False) -> Any:
    if path is None:
        return None
    from fitaudit.models.formats import FORMATS
    from fitaudit.models.formats.skops import load_skops

    if not FORMATS["skops"].recognises(Path(path)):
        raise InputError(f"`--learner` must be a scikit-learn estimator saved with skops (.skops); got {path!r}.")
    return load_skops(_existing(path, "--learner") or path, name="--learner", trust_code=trust_code)


def _generator(args: argparse.Namespace) -> Any:
    """The Shapes scenario for the examiner: held-out objects of the model's classes, in its label order."""
    check_int(args.examine_objects, "--examine-objects", minimum=1)  # checked also when not used
    check_int(args.image_size, "--image-size", minimum=1)
    if not args.shapes_classes:
        return None
    from fitaudit.data.shapes import ShapesGenerator

    classes = [name.strip() for name in args.shapes_classes.split(",") if name.strip()]
    return ShapesGenerator(args.examine_objects, classes=classes, split="test", image_size=args.image_size)


#: options that apply to image folders only, with their defaults
IMAGES_ONLY: dict[str, tuple[str, Any]] = {
    **SIZE_OPTIONS, "classes": ("--classes", None), "train_images": ("--train-images", None), "skip_broken": ("--skip-broken", False),
    "verify_content": ("--verify-content", None),
}


def fail_on_names(text: str | None) -> list[str]:
    """``--fail-on`` as a list of names."""
    return [name.strip() for name in (text or "").split(",") if name.strip()]


def summary(result: Any, out: Path | None = None) -> str:
    """The audit's verdicts, one line per part, what was reused, and where the report is (``out``).

    ``out`` defaults to the result's checkpoint folder (the command line
    saves the report where it keeps the parts).
    """
    from fitaudit.auditing.runner import reuse_note
    from fitaudit.report.audit import summary_text

    folder = out if out is not None else Path(result.settings.get("checkpoint_dir") or ".")
    note = reuse_note(result.parts, folder / "parts", result.settings.get("image_keys"))
    return summary_text(result) + "\n\n" + (f"{note}\n" if note else "") + report_location(result, folder)


def _handler(args: argparse.Namespace) -> Any:
    from fitaudit import audit
    from fitaudit.auditing import INSTRUMENTS, check_factors
    from fitaudit.auditing.checks import check_fail_on
    from fitaudit.data.tables import is_table_file
    from fitaudit.report import save_audit
    from fitaudit.report.saved import repair_page

    if args.data is not None:  # image-folder options would do nothing
        refuse_unused(args, IMAGES_ONLY, "--images", "--data")
    else:
        refuse_table_options(args, "--images")
    given = "--label" if args.label is not None else "--features" if args.features is not None else None
    for option, path in (("--data", args.data), ("--train-data", args.train_data)):
        if given is not None and path is not None and not is_table_file(path):
            raise InputError(f"`{given}` goes with a table (.csv or .parquet) as `{option}`; {path!r} is not one.")
    fail_on = check_fail_on(fail_on_names(args.fail_on))  # before any work: a typo never replaces a report
    instruments = fail_on_names(args.instruments) or None
    for name in instruments or []:
        if name not in INSTRUMENTS:
            raise InputError(f"`--instruments` must name some of {', '.join(INSTRUMENTS)}; got {name!r}.")
    generator = _generator(args)
    factors = check_factors(parse_factors(args.factor, "--factor"), generator, option="--factor")
    out = Path(args.out)
    repair_page(out)  # a page left beside another run's audit.json by a kill between the two writes
    result = audit(
        _existing(args.model, "--model"),
        _existing(args.data, "--data"),
        train_data=_existing(args.train_data, "--train-data"),
        learner=_learner(args.learner, trust_code=args.trust_code),
        models=[_existing(m, "--models") for m in args.models] or None,
        generator=generator,
        task=_existing(args.task, "--task"),
        examiner=args.examiner,
        examine_steps=args.examine_steps,
        factors=factors,
        margin=args.margin,
        eps=args.eps,
        stride=args.stride,
        mirror=args.mirror,
        delta=args.delta,
        pmv_threshold=args.pmv_threshold,
        instruments=instruments,
        checkpoint_dir=out,  # the parts and the instruments' checkpoints: a rerun resumes
        # --device, --n-jobs, --seed, --quiet, --trust-code; the audit connects to --dask-scheduler itself
        options=run_options(args).replace(dask_scheduler=args.dask_scheduler),
        images=_existing(args.images, "--images"),
        train_images=_existing(args.train_images, "--train-images"),
        pipeline=given_pipeline(args),
        skip_broken=args.skip_broken,
        classes=args.classes,
        label=args.label,
        features=args.features,
        verify_content=args.verify_content,
        names=CLI_OPTIONS,  # a skipped part's reason names this command's options (`--train-data`)
        trust_torchscript=args.trust_torchscript,
    )
    save_audit(result, out)  # audit.json and report.html, as one unit
    args.summary = functools.partial(summary, out=out)
    failures = result.failing(fail_on) if fail_on else []
    if failures:
        from fitaudit.cli._output import emit

        emit(result, as_json=args.json, summary=args.summary)
        sys.stdout.flush()
        raise VerdictFailed("--fail-on: " + " | ".join(failures))
    return result


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``fitaudit audit``."""
    parser = subparsers.add_parser(
        "audit", parents=parents, **examples(
            "fitaudit audit --model clf.skops --data test.csv --label target --train-data train.csv",
            "fitaudit audit --model net.onnx --images val/ --train-images train/ --resize 56 --crop 32 --stride 4 "
            "--mirror",
            "fitaudit audit --model run/model --data test.npz --models run2/model run3/model --fail-on overfit"), help="run every instrument that applies to a model; one HTML report",
        description=(
            "Audit a model: the overfitting test on the scored data (and on the training data, side by side), "
            "the N-model test over several runs, the adversarial examiner when inputs can be generated, the "
            "generalization measures for a population of models, and perturbed model validation of a "
            "scikit-learn learner. Parts that cannot run are listed with the reason. Writes OUT/report.html "
            "and OUT/audit.json; an interrupted audit resumes from OUT/parts."
        ),
    )
    parser.add_argument("--model", required=True, help="ONNX file, torch model folder (safetensors + config.json), "
                        "Hugging Face folder (save_pretrained), Keras .keras file, .skops, XGBoost .json/.ubj or "
                        "LightGBM .txt")
    parser.add_argument("--data", help=option_help("--data", "the data the model is scored on; canvases may hold "
                                                               "their margin"))
    add_table_options(parser)
    parser.add_argument("--images", help=option_help("--images", "instead of --data: scored through the evaluation "
                                                                 "pipeline"))
    parser.add_argument("--train-images", help="the image folder the model was trained on (overfitting test side by side)")
    add_pipeline_options(parser, arrays=True)
    add_classes_option(parser)
    parser.add_argument("--skip-broken", action="store_true",
                        help="with --images: leave out unreadable image files (listed in the report)")
    add_verify_content(parser)
    parser.add_argument("--train-data", help="the data the model was trained on, as --data (leakage; overfitting test "
                        "side by side; PMV)")
    parser.add_argument("--learner", help="scikit-learn learner to retrain for PMV (.skops); default: the model if it is .skops")
    parser.add_argument("--models", nargs="+", default=[], metavar="M", help="other trained runs of the same procedure (N-model test)")
    parser.add_argument("--shapes-classes", metavar="LIST",
                        help="examine over the Shapes world: the model's classes in label order (e.g. sphere,cube,torus)")
    parser.add_argument("--image-size", type=int, default=32, help="side of the Shapes renders the model takes (default 32)")
    parser.add_argument("--examine-objects", type=int, default=3, help="held-out objects per class to examine (default 3)")
    parser.add_argument("--examiner", default="bo", help="bo, rl, random or optuna:NAME (default bo)")
    parser.add_argument("--factor", action="append", metavar="NAME=LOW:HIGH",
                        help="narrow or widen (NAME=VALUE: fix) an examined factor, e.g. rotation=-15:15; repeatable "
                             "(as on fitaudit examine)")
    parser.add_argument("--examine-steps", type=int, default=30, help="examination steps T per object (default 30)")
    parser.add_argument("--task", help="a population of models in the PGDL task format (fitaudit pgdl zoo build): rank measures")
    parser.add_argument("--margin", type=int, help="canvas margin P of image data (default: the .npz's 'margin')")
    parser.add_argument("--eps", type=int, help="largest shift of the AEG, in steps of --stride pixels (default "
                        "min(2, margin // (3 * stride)) for canvases, floor(P / (3 * stride)) for --images)")
    parser.add_argument("--stride", type=int, default=1,
                        help="pixels per step of the AEG's shifts (default 1); beyond a random-crop augmentation's "
                             "range the test sees a model trained on random crops; needs margin >= 3 * eps * stride")
    parser.add_argument("--mirror", action="store_true",
                        help="the AEG also tries the mirror image of every shift; only for mirror-symmetric images "
                             "(the G3 check tests the flip; inconclusive where it fails)")
    parser.add_argument("--delta", type=float, default=0.05, help="level of the overfitting tests (default 0.05)")
    parser.add_argument("--pmv-threshold", type=float, default=0.3, help="smallest |k_S| counted as a good fit (default 0.3)")
    parser.add_argument("--instruments", help="run only these (comma-separated); a missing input is then an error")
    parser.add_argument("--out", default="fitaudit-out/audit", help=option_help(
        "--out", "a folder: report.html, audit.json and the parts a rerun resumes from; default fitaudit-out/audit"))
    parser.add_argument("--n-jobs", type=int, help="parallel workers for retraining-heavy parts (joblib)")
    add_dask_option(parser, "the heavy parts")
    add_device_option(parser)
    parser.set_defaults(cluster_in_library=True)  # audit() connects to the cluster and records it
    add_seed(parser, "every random choice")
    add_trust_options(parser)
    parser.add_argument("--fail-on", metavar="VERDICTS", help=f"exit 1 if one of these fails, is inconclusive or cannot run: {FAIL_ON_HELP}")
    parser.set_defaults(handler=_handler, summary=summary, out_is_folder=True)
