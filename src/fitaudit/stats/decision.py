"""The accuracy's verdict: the measured accuracy with its exact (Clopper-Pearson) interval is a measurement.

The agreement check decides in :meth:`fitaudit.stats.agreement.AgreementResult.verdict`
(its power and thresholds live with its statistic).
"""

from __future__ import annotations

from typing import Any

from fitaudit.verdict import Verdict


def accuracy_verdict(result: Any, **_: Any) -> Verdict:
    """The accuracy k / n and its interval (a measurement)."""
    return Verdict("info", "measured", {"accuracy": float(result.accuracy), "correct": int(result.correct),
                                        "n": int(result.n), "low": float(result.low), "high": float(result.high),
                                        "confidence_level": float(result.confidence_level)})
