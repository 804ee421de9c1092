"""The ``fitaudit`` command (also ``python -m fitaudit``).

Subcommands live next to their instrument: each module named in
:data:`COMMAND_MODULES` has a ``register(subparsers, parents)`` function that
adds its parser and sets ``handler``; each module in
:data:`REPRODUCTION_MODULES` registers under ``fitaudit reproduce``.

Conventions
-----------
* ``--json``: the machine-readable result goes to stdout, nothing else does
  (progress bars and notes go to stderr).
* Bad usage or bad input: a one-line message on stderr and exit code 2,
  never a traceback.
* A handler returns a :class:`fitaudit.results.Result` or a JSON-safe dict;
  without ``--json`` its ``repr`` (or an indented dump) is printed.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from fitaudit import __version__
from fitaudit._errors import FitauditError, InputError
from fitaudit.results import Result, to_jsonable

#: modules that add a top-level subcommand
COMMAND_MODULES: list[str] = [
    "fitaudit.demo",
    "fitaudit.cli.inspect",
    "fitaudit.cli.overfit",
    "fitaudit.cli.pmv",
    "fitaudit.cli.shapes",
]

#: modules that add a ``fitaudit reproduce NAME`` experiment
REPRODUCTION_MODULES: list[str] = [
    "fitaudit.overfit.reproduce.shapes",
    "fitaudit.overfit.reproduce.synthetic",
    "fitaudit.pmv.reproduce",
]


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose usage errors are one line and exit code 2."""

    def error(self, message: str) -> Any:
        self.exit(2, f"fitaudit: error: {message} (see `{self.prog} --help`)\n")


def common_options() -> argparse.ArgumentParser:
    """Options every subcommand shares (``--json``, ``--quiet``)."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    parent.add_argument("--quiet", action="store_true", help="no progress bars")
    return parent


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every registered subcommand."""
    parser = _Parser(
        prog="fitaudit",
        description="Tell whether a model's measured performance can be trusted.",
    )
    parser.add_argument("--version", action="version", version=f"fitaudit {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    parents = [common_options()]
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers, parents)
    if REPRODUCTION_MODULES:
        reproduce = subparsers.add_parser(
            "reproduce", help="re-run a paper's experiment", description="Re-run a paper's experiment."
        )
        experiments = reproduce.add_subparsers(
            dest="experiment", metavar="EXPERIMENT", parser_class=_Parser, required=True
        )
        for name in REPRODUCTION_MODULES:
            importlib.import_module(name).register(experiments, parents)
    return parser


def emit(result: Any, *, as_json: bool) -> None:
    """Print a handler's result in the chosen format."""
    if result is None:
        return
    if as_json:
        json.dump(to_jsonable(result), sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif isinstance(result, Result):
        print(repr(result))
    else:
        print(json.dumps(to_jsonable(result), indent=2))


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
        result = handler(args)
    except (InputError, FileNotFoundError, IsADirectoryError) as exc:
        print(f"fitaudit: error: {exc}", file=sys.stderr)
        return 2
    except FitauditError as exc:
        print(f"fitaudit: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("fitaudit: interrupted; finished work is kept where a checkpoint was given", file=sys.stderr)
        return 130
    try:
        emit(result, as_json=args.json)
    except BrokenPipeError:  # e.g. `fitaudit ... --json | head`: the reader left, not an error
        sys.stdout = open(os.devnull, "w")  # keeps the interpreter's exit-time flush quiet
    return 0
