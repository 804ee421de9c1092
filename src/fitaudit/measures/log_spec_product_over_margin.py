"""Margin-normalised log product of spectral norms (Jiang et al. 2020, eq. 31)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures import _torch as T
from fitaudit.measures._fantastic import SpectralMeasure


class LogSpecProductOverMargin(SpectralMeasure):
    """sum_i log ||W_i||_2^2 - 2 log gamma, scaled 0.5 (v - log m).

    The spectral product over the squared output margin ``gamma`` (10th
    percentile of true-class logit minus largest other, absolute value).
    """

    name: ClassVar[str] = "log_spec_product_over_margin"
    log_scaled: ClassVar[bool] = True

    def raw(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray) -> float:
        gamma = T.margin_gamma(model, x, y)
        return float(np.log(self.spectral_squares(model, x)).sum() - 2 * np.log(gamma))
