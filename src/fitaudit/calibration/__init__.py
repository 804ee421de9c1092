"""Are the model's probabilities right? (issue 48, the ``calibration`` check; docs/calibration.md)

:func:`calibration_check` measures the top-label expected calibration error
(Guo et al. 2017, equal-width bins), its debiased estimate (Kumar et al.
2019) with a bootstrap interval, the mean confidence against the accuracy
with an exact test, and keeps the reliability diagram's data. The decision
is :func:`fitaudit.calibration.decision.calibration_verdict`.
"""

from fitaudit.calibration.decision import MATERIAL_ECE, calibration_verdict
from fitaudit.calibration.result import (
    CALIBRATION_TOLERANCE,
    N_BINS,
    N_BOOT,
    CalibrationResult,
    calibration_check,
    top_label,
)

__all__ = ["CALIBRATION_TOLERANCE", "MATERIAL_ECE", "N_BINS", "N_BOOT", "CalibrationResult", "calibration_check",
           "calibration_verdict", "top_label"]
