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


def accuracy_contradiction(result: Any) -> str | None:
    """Where a saved accuracy disagrees with its counts: k / n, its exact interval, the per-class counts."""
    from fitaudit.results import first_mismatch, mismatch
    from fitaudit.stats.intervals import binomial_interval

    if not 0 <= int(result.correct) <= int(result.n) or int(result.n) < 1:
        return f"`correct` {result.correct} of `n` {result.n} is not a count of scored examples"
    interval = binomial_interval(int(result.correct), int(result.n), float(result.confidence_level))
    return first_mismatch(
        mismatch("accuracy", result.accuracy, result.correct / result.n),
        mismatch("low", result.low, interval.low, tolerance=1e-6),
        mismatch("high", result.high, interval.high, tolerance=1e-6),
        mismatch("class_correct (sum)", int(sum(result.class_correct)), int(result.correct)),
        mismatch("class_total (sum)", int(sum(result.class_total)), int(result.n)),
    )


def agreement_contradiction(result: Any) -> str | None:
    """Where a saved agreement estimate disagrees with its counts: agree / n and its exact interval."""
    from fitaudit.results import first_mismatch, mismatch
    from fitaudit.stats.intervals import binomial_interval

    if not 0 <= int(result.agree) <= int(result.n) or int(result.n) < 1:
        return f"`agree` {result.agree} of `n` {result.n} is not a count of scored inputs"
    interval = binomial_interval(int(result.agree), int(result.n), float(result.confidence_level))
    return first_mismatch(mismatch("estimate", result.estimate, result.agree / result.n),
                          mismatch("low", result.low, interval.low, tolerance=1e-6),
                          mismatch("high", result.high, interval.high, tolerance=1e-6))
