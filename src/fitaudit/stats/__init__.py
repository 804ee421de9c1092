"""Statistics shared by the instruments: empirical Bernstein bounds, p-values, binomial intervals, agreement."""

from __future__ import annotations

from fitaudit.stats.agreement import AgreementResult, agreement
from fitaudit.stats.bernstein import (
    ConfidenceInterval,
    bernstein_interval,
    bernstein_log_evidence,
    bernstein_pvalue,
    empirical_bernstein_bound,
    sample_mean_and_variance,
)
from fitaudit.stats.binomial import AccuracyResult, accuracy, binomial_interval

__all__ = [
    "AccuracyResult",
    "AgreementResult",
    "accuracy",
    "agreement",
    "binomial_interval",
    "ConfidenceInterval",
    "bernstein_interval",
    "bernstein_log_evidence",
    "bernstein_pvalue",
    "empirical_bernstein_bound",
    "sample_mean_and_variance",
]
