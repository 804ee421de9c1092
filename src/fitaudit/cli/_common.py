"""Helpers shared by the command modules: checked paths, shared options, number formatting."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from fitaudit._errors import InputError
from fitaudit.data.decode import DECODE_THREADS as _DECODE_THREADS

#: options naming where a command writes (a folder, or a file in a folder), by their argparse dest
OUTPUT_OPTIONS = {"out": "--out", "checkpoint_dir": "--checkpoint-dir", "models_dir": "--models-dir"}
#: those of them that are always folders (``--out`` is a file for some commands)
FOLDER_OPTIONS = ("checkpoint_dir", "models_dir")

#: decoding threads by default: the library's default, the cores this process may run on
DECODE_THREADS = _DECODE_THREADS

#: where the user guide lives (help texts and messages point there)
USER_GUIDE = "the user guide (docs/)"


#: the heading of the runnable examples that end every command's ``--help``
EXAMPLES_HEADING = "Examples:"


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help layout, with the examples kept line by line as written (the description is wrapped
    as usual; :class:`argparse.RawDescriptionHelpFormatter` would keep it on one long line)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith(EXAMPLES_HEADING):
            return argparse.RawDescriptionHelpFormatter._fill_text(self, text, width, indent)
        return super()._fill_text(text, width, indent)


def examples(*lines: str) -> dict[str, Any]:
    """The ``add_parser`` keywords that end a command's ``--help`` with these runnable examples (two or three,
    as git's manual pages and scikit-learn's docs end with theirs); each line starts with the command."""
    return {"epilog": "\n".join([EXAMPLES_HEADING, *(f"  {line}" for line in lines)]),
            "formatter_class": HelpFormatter}


#: the one wording of each option many commands take; a command adds only its default or its own limit, in
#: parentheses after it (:func:`option_help`), so that ``--data`` reads the same in every ``--help``
SHARED_HELP = {
    "--data": "an .npz file with arrays x (inputs) and y (labels), or a .csv/.parquet table with --label",
    "--images": "labelled images: a folder root/<class>/<image> (JPEG, PNG, ...) or a CSV file of path,label",
    "--label": "with a .csv/.parquet table: the column holding the labels, the model's class names when it has "
               "them, else indices 0..k-1",
    "--device": "where torch models run: cpu, cuda, cuda:N or mps; ONNX models: cpu or cuda",
    "--out": "where the command writes",
}


def option_help(option: str, detail: str | None = None) -> str:
    """The help of a shared ``option`` (:data:`SHARED_HELP`), with the command's ``detail`` (its default, what it
    writes, a limit) in parentheses."""
    return SHARED_HELP[option] + (f" ({detail})" if detail else "")


def data_file(path: Any, option: str = "--data") -> Path:
    """``path`` as an existing file (a folder or a missing path is a one-line error)."""
    target = Path(path)
    if target.is_dir():
        raise InputError(f"`{option}` must be a file; {str(target)!r} is a folder.")
    if not target.is_file():
        raise InputError(f"`{option}`: file {str(target)!r} does not exist.")
    return target


def out_folder(path: Any, option: str = "--out") -> Path:
    """``path`` as a folder to write into (created later; an existing file is an error)."""
    from fitaudit.checkpoint import check_folder

    return check_folder(str(path), option)


def out_file(path: Any, option: str = "--out") -> Path:
    """``path`` as a file to write (an existing folder there is an error naming ``option``)."""
    target = Path(path)
    if target.is_dir():
        raise InputError(f"`{option}` must be a file path; {str(target)!r} is a folder.")
    return target


def check_writable(path: Any, option: str) -> Path:
    """``path`` (a folder or file to write, existing or not) can be written: one-line error naming ``option`` if not.

    The nearest existing path at or above ``path`` must be a folder this
    process may write into (or ``path`` itself an existing file it may
    replace). A path under a regular file fails for every user, root
    included; a read-only folder or file system fails too.
    """
    target = Path(os.fspath(path))
    existing = next((p for p in (target, *target.parents) if os.path.lexists(p)), Path("."))
    if existing != target and not existing.is_dir():
        raise InputError(f"`{option}`: cannot write {str(target)!r}: {str(existing)!r} is a file, not a folder.")
    mode = os.W_OK | (os.X_OK if existing.is_dir() else 0)
    if not os.access(existing, mode, effective_ids=os.access in os.supports_effective_ids):
        kind = "folder" if existing.is_dir() else "file"
        raise InputError(f"`{option}`: cannot write {str(target)!r}: {kind} {str(existing)!r} is not writable.")
    return target


@contextlib.contextmanager
def output_locks(args: argparse.Namespace) -> Iterator[None]:
    """Hold every output folder of the command (:func:`fitaudit.folder_lock.writer_lock`) while it runs.

    The folders are :data:`FOLDER_OPTIONS` and ``--out`` where the command
    writes a folder there (its parser sets ``out_is_folder``). A folder held
    by another live run is a one-line error before any work; the lock of a
    killed run is taken over, with a note.
    """
    import sys

    from fitaudit.folder_lock import holder_text, writer_lock

    dests = [*FOLDER_OPTIONS, *(("out",) if getattr(args, "out_is_folder", False) else ())]
    words = [args.command, *(value for dest, value in vars(args).items()
                             if (dest.endswith("_command") or dest == "experiment") and isinstance(value, str))]
    command = " ".join(["fitaudit", *(str(word) for word in words if word)])
    with contextlib.ExitStack() as stack:
        for dest in dests:
            value = getattr(args, dest, None)
            if isinstance(value, (str, os.PathLike)):
                lock = stack.enter_context(writer_lock(value, option=OUTPUT_OPTIONS[dest], command=command))
                if lock.taken_over is not None:
                    print(f"fitaudit: note: {OUTPUT_OPTIONS[dest]} {str(value)!r} was held by a run that ended "
                          f"without releasing it ({holder_text(lock.taken_over)}); taken over.", file=sys.stderr)
        yield


def check_common_options(args: argparse.Namespace) -> None:
    """Check, before a command's handler runs, the options many commands share.

    Every output option (:data:`OUTPUT_OPTIONS`) must be writable (a folder
    where :data:`FOLDER_OPTIONS` says so), ``--n-jobs`` valid
    (:func:`fitaudit.parallel.check_n_jobs`) and every seed non-negative, so that a
    command fails at once with one line naming the option instead of after
    its work, or with a traceback.
    """
    from fitaudit.checkpoint import check_folder
    from fitaudit.parallel import check_n_jobs

    for dest, option in OUTPUT_OPTIONS.items():
        value = getattr(args, dest, None)
        if isinstance(value, (str, os.PathLike)):
            check_writable(value, option)
            if dest in FOLDER_OPTIONS:
                check_folder(value, option)
    if hasattr(args, "n_jobs"):
        check_n_jobs(args.n_jobs, "--n-jobs")
    if getattr(args, "device", None) is not None:
        check_device(args.device, "--device")
    for dest, value in vars(args).items():  # --seed, --data-seed, --world-seed: named as typed, not `random_state`
        if (dest == "seed" or dest.endswith("_seed")) and isinstance(value, int) and value < 0:
            raise InputError(f"`--{dest.replace('_', '-')}` must be a non-negative integer seed; got {value}.")


def refuse_unused(args: argparse.Namespace, options: dict[str, tuple[str, Any]], goes_with: str, given: str) -> None:
    """Options (argparse dest -> (option, default)) set away from their default, where they would do nothing, are refused.

    ``goes_with`` names the option they apply to, ``given`` the one given
    instead: ``"`--shards` goes with `--images`; it does nothing with `--data`."``
    """
    for dest, (option, default) in options.items():
        if getattr(args, dest) != default:
            raise InputError(f"`{option}` goes with `{goes_with}`; it does nothing with `{given}`.")


def probe_models(paths: Sequence[str], models: Sequence[Any], probe: Any, what: str) -> list[Any]:
    """Call every model once on ``probe`` (also makes ``n_classes`` known); a refusal names ``what`` and the model."""
    for path, model in zip(paths, models):
        try:
            model.logits(probe)
        except InputError as exc:
            raise InputError(f"{what}, and model {path} refuses them ({exc})") from exc
    return list(models)


def probe_crop(paths: Sequence[str], models: Sequence[Any], pipeline: Any) -> list[Any]:
    """:func:`probe_models` on one normalised ``C x C`` crop of ``pipeline``: a model of another input size names ``--crop``."""
    import numpy as np

    channels = pipeline.n_channels
    probe = pipeline.normalise(np.zeros((1, channels, pipeline.crop, pipeline.crop), np.float32))
    what = f"`--crop` {pipeline.crop} gives the model {channels}x{pipeline.crop}x{pipeline.crop} images"
    return probe_models(paths, models, probe, what)


def add_verify_content(parser: argparse.ArgumentParser) -> None:
    """``--verify-content`` / ``--no-verify-content``: how stored results are matched to image folders."""
    from fitaudit.data.images import CONTENT_KEY_LIMIT

    parser.add_argument(
        "--verify-content", action=argparse.BooleanOptionalAction, default=None,
        help="match stored results to the image folders by the files' content (read in full), or with "
             "--no-verify-content by their sizes and modification times; default: by content for folders "
             f"up to {CONTENT_KEY_LIMIT // 2**20} MB")


#: the one wording of --trust-code, wherever a command takes it
TRUST_CODE_HELP = ("allow model files that run code: a model folder whose config.json names your own architecture "
                   "file (runs that file), or a .skops file naming types or functions outside fitaudit's allowlist "
                   "(docs/security.md); only for files whose author you trust")


def add_trust_options(parser: argparse.ArgumentParser) -> None:
    """``--trust-torchscript`` and ``--trust-code``: the opt-ins to model files that run code when loaded."""
    parser.add_argument("--trust-torchscript", action="store_true",
                        help="allow loading a TorchScript file (runs code stored in it; only for trusted files)")
    parser.add_argument("--trust-code", action="store_true",
                        help=TRUST_CODE_HELP)


def trust_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of :func:`fitaudit.models.load_model` that :func:`add_trust_options` sets."""
    return {"trust_torchscript": args.trust_torchscript, "trust_code": args.trust_code}


def run_options(args: argparse.Namespace) -> Any:
    """The :class:`fitaudit.options.RunOptions` of the shared flags (``--device``, ``--n-jobs``, ``--seed``,
    ``--quiet``, ``--trust-code``) a command has; the defaults for those it lacks.

    ``--backend`` and ``--dask-scheduler`` stay out: every command runs inside them already
    (:func:`run_handler` and :func:`fitaudit.cli.main`), and a second Dask client is not wanted.
    """
    from fitaudit.options import RunOptions

    return RunOptions(device=getattr(args, "device", "cpu"), n_jobs=getattr(args, "n_jobs", None),
                      random_state=getattr(args, "seed", 0), progress=not getattr(args, "quiet", False),
                      trust_code=bool(getattr(args, "trust_code", False)))


def add_table_options(parser: Any) -> None:
    """``--label`` and ``--features``: the label column and feature columns of a .csv/.parquet table."""
    parser.add_argument("--label", help=option_help("--label"))
    parser.add_argument("--features", nargs="+", metavar="COLUMN",
                        help="with a table: the feature columns, in the order the model takes them "
                             "(default: every column but --label)")


def table_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of :func:`fitaudit.auditing.inputs.load_data` that :func:`add_table_options` sets."""
    return {"label": args.label, "features": args.features, "label_option": "--label",
            "features_option": "--features"}


def refuse_table_options(args: argparse.Namespace, given: str) -> None:
    """``--label``/``--features`` given where no table is read (image folders) are refused."""
    refuse_unused(args, {"label": ("--label", None), "features": ("--features", None)}, "--data (a table)", given)


def add_seed(parser: argparse.ArgumentParser, what: str) -> None:
    """``--seed`` (default 0) with a help text saying what it seeds."""
    parser.add_argument("--seed", type=seed_option, default=0, help=f"seed of {what} (default 0)")


#: seeds are passed to numpy, scikit-learn and torch: scikit-learn takes them below 2**32
_SEED_LIMIT = 2**32


def seed_option(text: str) -> int:
    """``--seed``: an integer below 2**32 (argparse type: a bad value is a one-line usage error; a negative
    one is refused by the library, naming the option)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer seed; got {text!r}") from None
    if value >= _SEED_LIMIT:
        raise argparse.ArgumentTypeError(f"must be an integer seed below 2**32 (4294967296); got {text}")
    return value


def add_device_option(parser: Any) -> None:
    """``--device`` (default cpu): the torch device (or ``cuda`` for ONNX) the command's networks run on; checked
    before any work."""
    parser.add_argument("--device", default="cpu", help=option_help("--device", "default cpu"))


def check_device(device: str, option: str = "--device") -> str:
    """``device`` exists on this machine (:func:`fitaudit.models.torch_adapter.resolve_device`); one line naming ``option`` if not.

    Without torch installed only ``cpu`` is checked here; an ONNX model checks
    ``cuda`` itself (its CUDAExecutionProvider) when it loads.
    """
    try:
        import torch  # noqa: F401
    except ImportError:
        return device
    from fitaudit.models.torch_adapter import resolve_device

    return str(resolve_device(device, name=option))


def add_dask_option(parser: Any, what: str = "the parallel units") -> None:
    """``--dask-scheduler ADDRESS``: run ``what`` on that Dask cluster (the same numbers as locally)."""
    parser.add_argument("--dask-scheduler", metavar="ADDRESS", type=dask_address,
                        help=f"run {what} on this Dask cluster (tcp://host:8786); workers must see the model and "
                             "data files at the same paths")


def dask_address(text: str) -> str:
    """``--dask-scheduler``: a scheduler address ``tcp://host:port`` (or another scheme such as tls://, ucx://)."""
    if not re.fullmatch(r"[a-z][a-z0-9+.-]*://[^\s/:]+(:[0-9]{1,5})?/?", text):
        raise argparse.ArgumentTypeError(f"must be a Dask scheduler address such as tcp://10.0.0.5:8786; got {text!r}")
    return text


def report_location(result: Any, out: Path | None = None) -> str:
    """Where an audit (or demo) wrote its HTML report and JSON: ``out``, by default its ``out`` setting."""
    out = out if out is not None else Path(result.settings.get("out", "."))
    return f"Report: {out / 'report.html'}  (data: {out / 'audit.json'})"


def table(rows: list[list[str]], header: list[str]) -> str:
    """Rows of text as aligned columns (first column left, the others right)."""
    cells = [header, *rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = []
    for row in cells:
        parts = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
        lines.append("  " + "  ".join(parts).rstrip())
    return "\n".join(lines)


#: the options of :func:`add_pipeline_options` with their defaults (argparse dest -> (option, default))
PIPELINE_OPTIONS: dict[str, tuple[str, Any]] = {
    "resize": ("--resize", None), "crop": ("--crop", None), "mean": ("--mean", None), "std": ("--std", None),
}
#: the options of the pipeline's size, for image folders only (.npz arrays have theirs; --mean/--std apply to both)
SIZE_OPTIONS = {key: PIPELINE_OPTIONS[key] for key in ("resize", "crop")}


def add_classes_option(parser: Any, when: str = "with --images") -> None:
    """``--classes``: the class names of image folders or CSV lists in the model's output order."""
    parser.add_argument(
        "--classes", default=None,
        help=f"{when}: class names in the model's output order, separated by commas (default: the names the model "
        "file records, else the folders' sorted names)",
    )


def add_pipeline_options(parser: Any, when: str = "with --images", crop_default: str = "the model file's",
                         arrays: bool = False) -> None:
    """``--resize``/``--crop``/``--mean``/``--std``: the evaluation pipeline of image folders.

    ``parser`` is a parser or an argument group; the defaults are
    :func:`pipeline_from_options`'s rule. ``arrays``: ``--mean``/``--std``
    also normalise ``.npz`` image arrays (``--data``).
    """
    scale = f"{when} or .npz image arrays in [0, 1] (--data)" if arrays else when
    parser.add_argument("--resize", type=int, help=f"{when}: shorter side R (default: the model file's, else --crop)")
    parser.add_argument("--crop", type=int, help=f"{when}: centre crop C (default: {crop_default})")
    for option, what in (("--mean", "mean"), ("--std", "std")):
        parser.add_argument(option, type=float, nargs="+", metavar=what[0].upper(),
                            help=f"{scale}: per-channel {what} (3 values for RGB, 1 for a grey model; default: the "
                            "model file's, else none)")


def given_pipeline(args: argparse.Namespace) -> dict[str, Any] | None:
    """The pipeline settings given on the command line (the rest is the model file's), or None."""
    return {key: getattr(args, key) for key in PIPELINE_OPTIONS if getattr(args, key) is not None} or None


def pipeline_from_options(
    args: argparse.Namespace, models: Sequence[Any] = (), *, input_size: int | None = None, required: bool = False
) -> Any:
    """The evaluation pipeline chosen from --resize/--crop/--mean/--std over what the model files record.

    One rule for every command (:func:`fitaudit.data.pipeline_rule.choose_pipeline`);
    ``models`` are the model paths that may record a pipeline; their
    declared input gives the channels (grey or RGB) and, without
    ``input_size``, the crop's default. Returns the
    :class:`~fitaudit.data.pipeline_rule.PipelineChoice` (its pipeline
    ``None`` when nothing gives a size and not ``required``).
    """
    from fitaudit.data.pipeline_rule import choose_pipeline
    from fitaudit.models.io import runs_pipelines

    recorded, spec = runs_pipelines(models)
    return choose_pipeline(recorded, resize=args.resize, crop=args.crop, mean=args.mean, std=args.std,
                           input_size=input_size or (spec.size if spec else None),
                           channels=spec.channels if spec else None, required=required)


def normalisation_from_options(args: argparse.Namespace, models: Sequence[Any], x: Any, option: str = "--data") -> Any:
    """The normalisation of .npz image arrays: --mean/--std over what the model files record (one rule)."""
    from fitaudit.data.pipeline_rule import choose_normalisation
    from fitaudit.models.io import runs_pipelines

    return choose_normalisation(runs_pipelines(models)[0], x, mean=args.mean, std=args.std, name=option)


def run_handler(handler: Any, args: argparse.Namespace) -> Any:
    """The command's ``handler(args)``, inside the Dask cluster of ``--dask-scheduler`` when one is given.

    Every :func:`fitaudit.parallel.parallel_map` of the command then runs
    there; commands whose library call takes the address itself (``audit``,
    ``demo``: ``cluster_in_library``) connect, and record it, on their own.
    """
    address = getattr(args, "dask_scheduler", None)
    if address is None or getattr(args, "cluster_in_library", False):
        return handler(args)
    from fitaudit.parallel import compute_backend

    with compute_backend(address):
        return handler(args)


def parse_factors(items: list[str] | None, option: str) -> dict[str, Any] | None:
    """``NAME=LOW:HIGH`` (or ``LOW,HIGH``: narrow or widen) and ``NAME=VALUE`` (fix) options."""
    if not items:
        return None
    out: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            numbers = [float(v) for v in value.replace(":", ",").split(",")]
        except ValueError:
            numbers = []
        if not sep or not name.strip() or len(numbers) not in (1, 2):
            raise InputError(f"`{option}` must look like NAME=LOW:HIGH or NAME=VALUE; got {item!r}.")
        if name.strip() in out:
            raise InputError(f"`{option}` sets {name.strip()!r} twice; give each factor once.")
        out[name.strip()] = numbers[0] if len(numbers) == 1 else tuple(numbers)
    return out
