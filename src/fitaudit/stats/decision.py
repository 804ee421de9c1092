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


def _proportion_contradiction(result: Any, count: str, estimate: str, scored: str) -> str | None:
    """Where a saved proportion ``count / n`` disagrees with its counts: the counts, the estimate, its exact interval."""
    from fitaudit.results import first_mismatch, mismatch
    from fitaudit.stats.intervals import binomial_interval

    k, n = int(getattr(result, count)), int(result.n)
    if not 0 <= k <= n or n < 1:
        return f"`{count}` {getattr(result, count)} of `n` {result.n} is not a count of scored {scored}"
    interval = binomial_interval(k, n, float(result.confidence_level))
    return first_mismatch(mismatch(estimate, getattr(result, estimate), getattr(result, count) / result.n),
                          mismatch("low", result.low, interval.low, tolerance=1e-6),
                          mismatch("high", result.high, interval.high, tolerance=1e-6))


def accuracy_contradiction(result: Any) -> str | None:
    """Where a saved accuracy disagrees with its counts: k / n, its exact interval, the per-class counts."""
    from fitaudit.results import first_mismatch, mismatch

    return first_mismatch(
        _proportion_contradiction(result, "correct", "accuracy", "examples"),
        mismatch("class_correct (sum)", int(sum(result.class_correct)), int(result.correct)),
        mismatch("class_total (sum)", int(sum(result.class_total)), int(result.n)),
    )


def agreement_contradiction(result: Any) -> str | None:
    """Where a saved agreement estimate disagrees with its counts: agree / n and its exact interval."""
    return _proportion_contradiction(result, "agree", "estimate", "inputs")
