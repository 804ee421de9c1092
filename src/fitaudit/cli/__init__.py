"""The ``fitaudit`` command (also ``python -m fitaudit``).

One module per command in this package: each has a
``register(subparsers, parents)`` function, listed in :data:`COMMANDS`
(explicit imports, no module loaded by name), that adds its parser and sets two defaults, ``handler`` (parses the options, calls
the library, returns a :class:`fitaudit.results.Result`) and ``summary``
(the human-readable text of that result). ``fitaudit reproduce NAME`` is
the command module :mod:`fitaudit.cli.reproduce`.

Conventions
-----------
* Without ``--json``: a short summary with a verdict sentence and the
  numbers behind it. With ``--json``: the result's ``to_dict()`` on stdout
  and nothing else (progress bars and notes go to stderr), with the
  machine-readable verdict at its top: ``"verdict": {"status", "reason",
  "numbers", "sentence"}`` (:func:`fitaudit.report.verdicts.verdict_json`;
  the contract is in the user guide, ``docs/verdicts.md``).
* Bad usage or bad input: a one-line message on stderr and exit code 2,
  never a traceback. Options every command shares are checked before the
  handler runs (:func:`fitaudit.cli._common.check_common_options`): an output
  folder (``--out``, ``--checkpoint-dir``) that cannot be written, or a bad
  ``--n-jobs``, fails at once; a file that cannot be written later is one
  line too.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from fitaudit import __version__
from fitaudit._errors import FitauditError, InputError
from fitaudit._names import CLI_OPTIONS
from fitaudit.cli import (
    audit,
    demo,
    examine,
    inspect,
    leakage,
    measures,
    overfit,
    pgdl,
    pmv,
    report,
    reproduce,
    shapes,
)
from fitaudit.cli._common import check_common_options, examples, output_locks, run_handler
from fitaudit.cli._output import emit, printable

#: what adds each top-level subcommand, in the order ``fitaudit --help`` lists them (the command modules keep
#: their heavy imports inside the handlers, so that building the parser stays quick)
COMMANDS: tuple[Callable[[Any, list[argparse.ArgumentParser]], None], ...] = (
    demo.register,
    audit.register,
    report.register,
    inspect.register,
    overfit.register,
    pmv.register,
    shapes.register,
    examine.register,
    pgdl.register,
    measures.register,
    reproduce.register,
    leakage.register,
)


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose usage errors are one line and exit code 2."""

    def error(self, message: str) -> Any:
        self.exit(2, f"fitaudit: error: {message} (see `{self.prog} --help`)\n")


def common_options() -> argparse.ArgumentParser:
    """Options every subcommand shares (``--json``, ``--quiet``, ``--backend``)."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    parent.add_argument("--quiet", action="store_true", help="no progress bars")
    parent.add_argument(
        "--backend", choices=["auto", "torch", "onnx", "eager"], default=None,
        help="how torch models run: the fastest backend agreeing with torch (auto, the default; the examiner runs "
             "eager unless this is given), torch only, onnxruntime, or eager torch at a fixed batch size (reproducible)",
    )
    parent.add_argument(
        "--limit", action="append", metavar="NAME=VALUE", default=None,
        help="raise a size bound on the files read (repeatable): table-columns (default 100000), table-rows "
             "(20000000), table-bytes (4 GiB: a CSV file, a decoded parquet file), image-pixels "
             "(50000000 per image), archive-bytes (4 GiB inflated: a .keras, .skops or .npz file), "
             "archive-member-bytes (2 GiB per member), model-config-bytes (64 MiB per JSON member); "
             "e.g. --limit table-rows=50000000",
    )
    return parent


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every registered subcommand."""
    parser = _Parser(
        prog="fitaudit",
        description="Tell whether a model's measured performance can be trusted.",
        **examples("fitaudit demo --quick",
                   "fitaudit audit --model clf.skops --data test.csv --label target --train-data train.csv",
                   "fitaudit audit --model net.onnx --images val/ --train-images train/"),
    )
    parser.add_argument("--version", action="version", version=f"fitaudit {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    parents = [common_options()]
    for register in COMMANDS:
        register(subparsers, parents)
    return parser


#: warnings that say nothing about the user's data on the command line
_QUIET_WARNINGS = (
    # data read from .npz files has no column names, whatever the estimator was fitted on
    "X does not have valid feature names",
)


def _warning_notes(caught: Sequence[warnings.WarningMessage]) -> list[str]:
    """The warnings a command's libraries raised (scikit-learn, LightGBM...), one line each however often they came."""
    counts: dict[tuple[str, str], int] = {}
    for warning in caught:
        first = next((line.strip() for line in str(warning.message).splitlines() if line.strip()), "")
        key = (warning.category.__name__, first)
        counts[key] = counts.get(key, 0) + 1
    return [printable(f"fitaudit: note: {category}{f' ({count} times)' if count > 1 else ''}: {message}")
            for (category, message), count in counts.items()]


def _os_error_line(exc: OSError) -> str:
    """One line for an operating-system error: what failed, on which path."""
    what = exc.strerror or type(exc).__name__
    where = f" {str(exc.filename)!r}" if exc.filename is not None else ""
    return f"cannot access{where}: {what}." if where else f"{what}: {exc}."


def _one_line(message: object) -> str:
    """A message on one line: an error quoted from a library (onnxruntime, torch) may span several."""
    return printable(" ".join(line.strip() for line in str(message).splitlines() if line.strip()))


_NAMED = re.compile(r"`(\w+)=?((?:\[[^`\]]*\])*)`")


def _as_options(message: str, parser: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """A library error on the command line names the options: `train_data` -> `--train-data`, `models=` -> `--models`,
    and the library's `x` (or `X`) and `y` -> the data options given (`--data['x']`, `--images`).

    Only names that are options of the command run (its parsed arguments) are rewritten.
    """
    options = {option for action in _all_actions(parser) for option in action.option_strings}
    given = set(vars(args))
    data = _data_options(args)

    def option(found: re.Match[str]) -> str:
        if found.group(1) in ("x", "X", "y") and data and not found.group(2):  # X: pmv's (scikit-learn's) name
            part = found.group(1).lower()
            return " or ".join(f"`{flag}['{part}']`" if flag in _ARRAY_OPTIONS else f"`{flag}`" for flag in data)
        flag = CLI_OPTIONS.get(found.group(1), "--" + found.group(1).replace("_", "-"))  # the one table of names
        dest = flag[2:].replace("-", "_")
        return f"`{flag}{found.group(2)}`" if dest in given and flag in options else found.group(0)

    return _NAMED.sub(option, message)


#: the options that carry a command's data, as (argument, option), in the order an error names them
_DATA_OPTIONS = (("data", "--data"), ("images", "--images"), ("test_data", "--test-data"), ("train_data", "--train-data"))


#: data options that read arrays (an .npz's `x` and `y`, a table's features and labels)
_ARRAY_OPTIONS = ("--data", "--test-data", "--train-data")


def _data_options(args: argparse.Namespace) -> list[str]:
    """The data options given to the command run: a library error about its `x` or `y` names them. A command
    given no data (``examine`` on its renders) feeds the model inputs it made itself: the error is the model's."""
    given = [flag for name, flag in _DATA_OPTIONS if getattr(args, name, None)]
    return given or (["--model"] if getattr(args, "model", None) else [])


def _all_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    actions = list(parser._actions)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                actions += _all_actions(child)
    return actions


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else 2
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0 if args.command is None else 2
    try:
        from fitaudit.data.limits import parse_limits, using_limits
        from fitaudit.models.inference import using_backend
        from fitaudit.models.inference.settings import default_backend_applied

        check_common_options(args)  # output folders writable, --n-jobs valid: before any work
        backend = getattr(args, "backend", None)
        bounds = parse_limits(getattr(args, "limit", None))
        with warnings.catch_warnings(record=True) as caught, using_backend(backend), using_limits(**bounds):
            warnings.simplefilter("always")  # every warning counted, then said once (_warning_notes)
            for message in _QUIET_WARNINGS:
                warnings.filterwarnings("ignore", message=message)
            with output_locks(args):  # one writer per output folder, held for the whole command
                result = run_handler(handler, args)
            if backend in ("torch", "onnx") and not default_backend_applied():
                print(f"fitaudit: note: --backend {backend} applied to no model: this run used no torch or ONNX "
                      "model (scikit-learn and other models run as they are).", file=sys.stderr)
    except InputError as exc:
        print(f"fitaudit: error: {_as_options(_one_line(exc), parser, args)}", file=sys.stderr)
        return 2
    except (FileNotFoundError, IsADirectoryError) as exc:
        print(f"fitaudit: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:  # a file that cannot be written (permissions, a file where a folder should be, disk full)
        print(f"fitaudit: error: {_one_line(_os_error_line(exc))}", file=sys.stderr)
        return 2
    except FitauditError as exc:
        print(f"fitaudit: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("fitaudit: interrupted; finished work is kept where a checkpoint was given", file=sys.stderr)
        return 130
    for note in _warning_notes(caught):
        print(note, file=sys.stderr)
    try:
        emit(result, as_json=args.json, summary=getattr(args, "summary", None))
    except BrokenPipeError:  # e.g. `fitaudit ... --json | head`: the reader left, not an error
        sys.stdout = open(os.devnull, "w")  # keeps the interpreter's exit-time flush quiet
    return 0
