"""The calibration check's decision: is miscalibration shown beyond noise, and could it have been?

Two tests on the scored rows (:mod:`fitaudit.calibration.result`), each at
half the family level, both of the null "miscalibrated by at most the
tolerance" (:data:`~fitaudit.calibration.result.CALIBRATION_TOLERANCE`), so a
model calibrated that well fails through them at most at the level (a
perfectly calibrated one too at tolerance 0: ``tests/calibration`` checks it
by simulation):

``fail``, ``overconfident`` / ``underconfident``
    the exact binomial test shows the accuracy more than the tolerance below
    (above) the mean confidence;
``fail``, ``miscalibrated``
    the consistency-resampling test shows the ECE beyond the tolerance, with
    the mean confidence not shown off (the errors cancel across the bins);
``inconclusive``, ``cannot_tell``
    no miscalibration shown, but at this n the test would miss an overall
    overconfidence of :data:`MATERIAL_ECE` (80% power; too few rows);
``pass``, ``calibrated``
    no miscalibration shown, and the smallest overconfidence the test sees
    with 80% power at this n is at most :data:`MATERIAL_ECE` (the verdict
    carries it: ``detectable``).
"""

from __future__ import annotations

import math
from typing import Any

from fitaudit.verdict import Verdict

#: the miscalibration a pass must be able to see: ten points of overconfidence, the order of the ECE of the
#: uncalibrated networks in Guo et al. (2017, Table 1: 3-16%, most above 4%); a test that would miss that much is
#: no evidence of calibration, so it says ``inconclusive``. The smallest size it does see is always stated.
MATERIAL_ECE = 0.10


def calibration_verdict(result: Any, **_: Any) -> Verdict:
    """The decision on a :class:`~fitaudit.calibration.result.CalibrationResult` (see the module docstring)."""
    detectable = result.detectable_overconfidence()
    numbers: dict[str, Any] = {
        "n": result.n, "ece": result.ece, "ece_debiased": result.ece_debiased, "ece_low": result.ece_low,
        "ece_high": result.ece_high, "ece_pvalue": result.ece_pvalue, "mean_confidence": result.mean_confidence,
        "accuracy": result.accuracy, "gap": result.mean_confidence - result.accuracy,
        "gap_pvalue": result.gap_pvalue, "tolerance": result.tolerance, "level": result.level,
        "n_bins": result.n_bins, "detectable": detectable, "material_ece": MATERIAL_ECE}
    if result.gap_pvalue < result.level / 2:
        reason = "overconfident" if result.mean_confidence > result.accuracy else "underconfident"
        return Verdict("fail", reason, numbers)
    if result.ece_pvalue < result.level / 2:
        return Verdict("fail", "miscalibrated", numbers)
    if math.isnan(detectable) or detectable > MATERIAL_ECE:
        return Verdict("inconclusive", "cannot_tell", numbers)
    return Verdict("pass", "calibrated", numbers)
