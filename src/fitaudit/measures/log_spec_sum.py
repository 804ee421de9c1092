"""Log sum of spectral norms (Jiang et al. 2020, eq. 35)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures._fantastic import SpectralMeasure, log_sum_form


class LogSpecSum(SpectralMeasure):
    """log d + (1/d) sum_i log ||W_i||_2^2, scaled 0.5 (v - log m).

    The reference's form of the log of the sum of spectral norms at the
    balanced rescaling (d = number of layers with weights).
    """

    name: ClassVar[str] = "log_spec_sum"
    needs_data: ClassVar[bool] = False
    log_scaled: ClassVar[bool] = True

    def raw(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray) -> float:
        squares = self.spectral_squares(model, x)
        return log_sum_form(float(np.log(squares).sum()), len(squares))
