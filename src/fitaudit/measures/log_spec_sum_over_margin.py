"""Margin-normalised log sum of spectral norms (Jiang et al. 2020, eq. 34)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures import _torch as T
from fitaudit.measures._fantastic import SpectralMeasure, log_sum_form


class LogSpecSumOverMargin(SpectralMeasure):
    """log d + (1/d) (sum_i log ||W_i||_2^2 - 2 log gamma), scaled 0.5 (v - log m)."""

    name: ClassVar[str] = "log_spec_sum_over_margin"
    log_scaled: ClassVar[bool] = True

    def raw(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray) -> float:
        squares = self.spectral_squares(model, x)
        gamma = T.margin_gamma(model, x, y)
        return log_sum_form(float(np.log(squares).sum() - 2 * np.log(gamma)), len(squares))
