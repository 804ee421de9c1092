"""Helpers shared by the command modules: checked paths, shared options, number formatting."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fitaudit._errors import InputError
from fitaudit.checkpoint import check_folder

#: where the user guide lives (help texts and messages point there)
USER_GUIDE = "the user guide (docs/)"


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
    return check_folder(str(path), option)


def add_seed(parser: argparse.ArgumentParser, what: str) -> None:
    """``--seed`` (default 0) with a help text saying what it seeds."""
    parser.add_argument("--seed", type=int, default=0, help=f"seed of {what} (default 0)")


def report_location(result: Any) -> str:
    """Where an audit (or demo) wrote its HTML report and JSON: its ``out`` setting."""
    out = Path(result.settings.get("out", "."))
    return f"Report: {out / 'report.html'}  (data: {out / 'audit.json'})"


def pvalue_text(p: float) -> str:
    """A p-value for people: ``p = 0.031``, ``p = 2.1e-06``, ``p < 1e-12``."""
    if p < 1e-12:
        return "p < 1e-12"
    return f"p = {p:.3g}"


def table(rows: list[list[str]], header: list[str]) -> str:
    """Rows of text as aligned columns (first column left, the others right)."""
    cells = [header, *rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = []
    for row in cells:
        parts = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
        lines.append("  " + "  ".join(parts).rstrip())
    return "\n".join(lines)
