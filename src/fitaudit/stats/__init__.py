"""Statistics shared by the instruments: empirical Bernstein bounds and p-values."""

from __future__ import annotations

from fitaudit.stats.bernstein import (
    ConfidenceInterval,
    bernstein_interval,
    bernstein_log_evidence,
    bernstein_pvalue,
    empirical_bernstein_bound,
    sample_mean_and_variance,
)

__all__ = [
    "ConfidenceInterval",
    "bernstein_interval",
    "bernstein_log_evidence",
    "bernstein_pvalue",
    "empirical_bernstein_bound",
    "sample_mean_and_variance",
]
