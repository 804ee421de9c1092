"""``fitaudit report AUDIT.json``: rebuild the HTML report from its JSON.

The JSON written by ``fitaudit audit`` or ``fitaudit demo`` holds everything
the page shows; this command draws the page again (e.g. after an upgrade,
or on another machine) without rerunning anything.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from fitaudit._errors import InputError
from fitaudit.cli._common import out_file


def rebuild_report(source: str | Path, target: str | Path | None = None) -> Path:
    """Read an audit's JSON and write its HTML report (default: ``report.html`` beside it)."""
    from fitaudit.auditing import load_audit
    from fitaudit.report import audit_page

    path = Path(source)
    if path.is_dir():
        path = path / "audit.json"
    if not path.is_file():
        raise InputError(f"`AUDIT_JSON`: {str(path)!r} does not exist.")
    try:
        data = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"`AUDIT_JSON`: {str(path)!r} is not JSON ({exc}).") from exc
    if not isinstance(data, dict) or data.get("type") != "AuditResult":
        raise InputError(f"`AUDIT_JSON`: {str(path)!r} is not an audit (from fitaudit audit or fitaudit demo).")
    result = load_audit(data, name="AUDIT_JSON")
    if any(part.expected is not None for part in result.parts):  # the demo's known answers: checked again
        from fitaudit.demo import attach_known_answers

        attach_known_answers(result.parts)
    destination = out_file(Path(target) if target is not None else path.with_name("report.html"))
    return Path(audit_page(result, destination))


def _handler(args: argparse.Namespace) -> Any:
    written = rebuild_report(args.audit_json, args.out)
    return {"report": str(written)}


def summary(result: Any) -> str:
    """Where the page was written."""
    return f"Report written to {result['report']}"


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``fitaudit report``."""
    parser = subparsers.add_parser(
        "report", parents=parents, help="rebuild the HTML report from an audit's JSON",
        description="Rebuild the self-contained HTML report from OUT/audit.json (of fitaudit audit or demo).",
    )
    parser.add_argument("audit_json", metavar="AUDIT_JSON", help="audit.json (or the folder holding it)")
    parser.add_argument("--out", help="HTML file to write (default: report.html next to the JSON)")
    parser.set_defaults(handler=_handler, summary=summary)
