"""Two classifiers on the same rows: the exact McNemar test and the conditional interval on their accuracy gap.

Only the discordant rows (one right, the other wrong) carry information
about the difference; given their number m, the wins are Binomial(m, 1/2)
under equal accuracy (McNemar 1947, in its exact form). Used by the
baseline check (:mod:`fitaudit.baseline`) and PMV's held-out reading
(:mod:`fitaudit.pmv.heldout`).

References
----------
.. [1] Q. McNemar, "Note on the sampling error of the difference between
       correlated proportions or percentages", Psychometrika 12, 1947.
.. [2] M. W. Fagerland, S. Lydersen and P. Laake, "The McNemar test for
       binary matched-pairs data: mid-p and asymptotic are better than
       exact conditional", BMC Medical Research Methodology 13, 2013.
"""

from __future__ import annotations

from scipy.stats import binomtest


def paired_interval(wins: int, losses: int, n: int, confidence_level: float = 0.95) -> tuple[float, float]:
    """Exact conditional interval on the accuracy difference (wins - losses) / n of two classifiers on n rows.

    (m / n)(2 q - 1) over the Clopper-Pearson interval of q = wins / m, with m
    = wins + losses the discordant rows (Fagerland, Lydersen and Laake 2013,
    the conditional method). It excludes 0 exactly when the exact McNemar
    test rejects at 1 - ``confidence_level`` (two-sided); with no discordant
    row the difference is 0 and so is its interval.

    Examples
    --------
    >>> low, high = paired_interval(12, 3, 100)
    >>> round(low, 3), round(high, 3)
    (0.006, 0.137)
    """
    discordant = wins + losses
    if discordant == 0:
        return (0.0, 0.0)
    share = binomtest(wins, discordant).proportion_ci(confidence_level, method="exact")
    scale = discordant / n
    return (scale * (2 * share.low - 1), scale * (2 * share.high - 1))


def one_sided_pvalue(wins: int, losses: int) -> float:
    """Exact McNemar p-value that the first classifier is more accurate (more wins than losses); 1 with none."""
    if wins + losses == 0:
        return 1.0
    return float(binomtest(wins, wins + losses, 0.5, alternative="greater").pvalue)
