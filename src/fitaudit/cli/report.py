"""``fitaudit report AUDIT.json``: rebuild the HTML report from its JSON.

The JSON written by ``fitaudit audit`` or ``fitaudit demo`` holds everything
the page shows; this command draws the page again (e.g. after an upgrade,
or on another machine) without rerunning anything.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fitaudit._errors import InputError
from fitaudit.cli._common import examples, option_help, out_file


def _rebuild(source: str | Path, target: str | Path | None = None) -> tuple[Path, Any]:
    """The page written from an audit's JSON, and the audit read (its verdicts decided again)."""
    from fitaudit.demo.answers import as_demo
    from fitaudit.report import audit_page
    from fitaudit.report.audit import json_digest_of
    from fitaudit.report.saved import read_saved_audit

    path = Path(source)
    if path.is_dir():
        path = path / "audit.json"
    if not path.is_file():
        raise InputError(f"`AUDIT_JSON`: {str(path)!r} does not exist.")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"`AUDIT_JSON`: {str(path)!r} is not JSON ({exc}).") from exc
    # a demo's audit knows its answers (computed again from its parts), an older demo's file included
    result = read_saved_audit(text, name="AUDIT_JSON", adapt=as_demo)
    destination = out_file(Path(target) if target is not None else path.with_name("report.html"))
    # the page names the JSON it was drawn from
    return Path(audit_page(result, destination, json_digest=json_digest_of(text))), result


def _handler(args: argparse.Namespace) -> Any:
    from fitaudit.report.verdicts import verdict_json

    written, audit = _rebuild(args.audit_json, args.out)
    return {"verdict": verdict_json(audit), "report": str(written)}


def summary(result: Any) -> str:
    """The audit's overall verdict (decided again from the file's evidence), and where the page was written."""
    verdict = result["verdict"]
    return f"Overall: {verdict['status'].upper()}: {verdict['sentence']}\nReport written to {result['report']}"


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``fitaudit report``."""
    parser = subparsers.add_parser(
        "report", parents=parents, **examples(
            "fitaudit report fitaudit-out/audit/audit.json", "fitaudit report fitaudit-out/audit --out audit.html"), help="rebuild the HTML report from an audit's JSON",
        description="Rebuild the self-contained HTML report from OUT/audit.json (of fitaudit audit or demo).",
    )
    parser.add_argument("audit_json", metavar="AUDIT_JSON", help="audit.json (or the folder holding it)")
    parser.add_argument("--out", help=option_help("--out", "an HTML file; default report.html next to the JSON"))
    parser.set_defaults(handler=_handler, summary=summary)
