"""``fitaudit demo``: the first questions and the four instruments on built-in data, with known answers, in one report.

Builds the data (the Shapes parts as image folders in ``--out``), trains the
reference models (kept in ``--out`` for the next run), runs every check on
cases whose right answer is known, and writes ``OUT/report.html`` and
``OUT/audit.json``. Measured on 2 CPU cores from an empty folder
(2026-11-25): 88 s, ``--quick`` 67 s at load 1-2; ``--quick`` 260 s at load
4-6 (before the digit examinations were added). See :mod:`fitaudit.demo` for what each part
shows.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fitaudit.cli._common import (
    add_dask_option,
    add_device_option,
    add_seed,
    examples,
    option_help,
    report_location,
)


def summary(result: Any) -> str:
    """The verdicts (the first line says how many known answers were found), what was reused, where the report is."""
    from fitaudit.auditing.runner import reuse_note
    from fitaudit.report.audit import summary_text

    note = reuse_note(result.parts, Path(result.settings["out"]) / "parts")
    return summary_text(result) + "\n\n" + (f"{note}\n" if note else "") + report_location(result)


def _handler(args: argparse.Namespace) -> Any:
    from fitaudit.demo import run_demo

    return run_demo(quick=args.quick, out=args.out, random_state=args.seed, progress=not args.quiet,
                    n_jobs=args.n_jobs, dask_scheduler=args.dask_scheduler, device=args.device)


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``fitaudit demo``."""
    parser = subparsers.add_parser(
        "demo", parents=parents, **examples(
            "fitaudit demo --quick", "fitaudit demo --out results/demo --seed 1", "fitaudit demo --device cuda"), help="run the first questions and the four instruments on built-in data; one HTML report",
        description=(
            "Run the first questions and the four instruments on built-in data where the right answers are known "
            "(a test folder with planted twins of training images, 40 runs assembled into one model region by "
            "region, chosen on the test labels or on validation data, a model tuned on its test set, a CNN on its own training images, "
            "a planted camera-elevation weakness, a model zoo, a learner that memorises noise) and write one "
            "report: OUT/report.html and OUT/audit.json. Image folders and trained models are kept in OUT, so a "
            "second run is fast."
        ),
    )
    parser.add_argument("--quick", action="store_true", help="a smaller run with the same answers (smaller data, fewer epochs)")
    parser.add_argument("--out", default="fitaudit-out/demo", help=option_help(
        "--out", "a folder: report.html, audit.json, the image folders and models; default fitaudit-out/demo"))
    add_seed(parser, "the data, training and tests")
    parser.add_argument("--n-jobs", type=int, help="parallel workers for retraining-heavy parts (joblib)")
    add_dask_option(parser, "the heavy parts")
    add_device_option(parser)
    parser.set_defaults(cluster_in_library=True)  # run_demo() connects to the cluster and records it
    parser.set_defaults(handler=_handler, summary=summary, out_is_folder=True)
