"""``fitaudit.audit``: the audit (:mod:`fitaudit.auditing`) with every verdict in words (:mod:`fitaudit.report`).

The audit decides and the report words; this module sits above both and
joins them, so a Python user gets the same sentences as the command line.
"""

from __future__ import annotations

import functools
from typing import Any

from fitaudit.auditing import AuditResult, run_audit
from fitaudit.report.verdicts import word_audit


@functools.wraps(run_audit)
def audit(*args: Any, **kwargs: Any) -> AuditResult:
    # the parameters and their documentation are run_audit's (functools.wraps)
    result: AuditResult = word_audit(run_audit(*args, **kwargs))
    return result

