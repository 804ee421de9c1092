"""An audit folder read back: ``audit.json`` as a result, and its page put right when it shows another JSON.

:func:`fitaudit.report.save_audit` writes the two as one unit and the
page names the SHA-256 of the JSON it was drawn from; a kill between the two
renames leaves a page beside another run's JSON, which :func:`repair_page`
draws again (``fitaudit audit`` and the demo call it before their work).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fitaudit._errors import InputError
from fitaudit.auditing.result import AuditResult
from fitaudit.report import audit_page, load_audit
from fitaudit.report.audit import json_digest_of, page_digest
from fitaudit.results import registered_types


def read_saved_audit(text: str, *, name: str = "audit.json", adapt: Callable[[Any], Any] | None = None) -> Any:
    """The :class:`~fitaudit.auditing.AuditResult` an ``audit.json`` text holds, validated field by field, worded.

    ``name`` is said in errors. The file may be an :class:`~fitaudit.auditing.AuditResult`
    or a registered subclass (the demo's ``DemoResult``, whose known answers
    are computed again from its parts); ``adapt`` rewrites the parsed JSON
    first (an older form of such a type's file).
    """
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise InputError(f"`{name}` is not JSON ({type(exc).__name__}: {str(exc)[:200]}).") from exc
    if adapt is not None:
        data = adapt(data)
    audits = {kind for kind, cls in registered_types().items() if issubclass(cls, AuditResult)}
    if not isinstance(data, dict) or data.get("type") not in audits:
        raise InputError(f"`{name}` is not an audit (from fitaudit audit or fitaudit demo).")
    try:
        return load_audit(data, name=name)
    except InputError:  # names the field already
        raise
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError, RecursionError) as exc:
        raise InputError(f"`{name}` is not a valid audit: {type(exc).__name__}: {str(exc)[:200]}.") from exc


def repair_page(folder: Any, *, adapt: Callable[[Any], Any] | None = None) -> bool:
    """Draw ``folder/report.html`` again from ``folder/audit.json`` when the page names another JSON digest.

    Returns whether the page was changed. A JSON that cannot be read as an
    audit leaves the page removed rather than beside a JSON it does not show.
    ``adapt``: as :func:`read_saved_audit`.
    """
    target = Path(folder)
    json_path, html_path = target / "audit.json", target / "report.html"
    named = page_digest(html_path)
    if named is None or not json_path.is_file():
        return False
    text = json_path.read_text(encoding="utf-8", errors="replace")
    if json_digest_of(text) == named:
        return False
    try:
        result = read_saved_audit(text, adapt=adapt)
    except InputError:
        html_path.unlink(missing_ok=True)
        return True
    audit_page(result, html_path, json_digest=json_digest_of(text))
    return True
