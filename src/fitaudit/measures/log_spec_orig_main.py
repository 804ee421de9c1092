"""Spectral bound with Frobenius-over-spectral term (Jiang et al. 2020, eq. 30)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures import _torch as T
from fitaudit.measures._fantastic import SpectralMeasure, frobenius_squares


class LogSpecOrigMain(SpectralMeasure):
    """sum_i log ||W_i||_2^2 - 2 log gamma + log sum_i ||W_i||_F^2 / ||W_i||_2^2, scaled 0.5 (v - log m)."""

    name: ClassVar[str] = "log_spec_orig_main"
    log_scaled: ClassVar[bool] = True

    def raw(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray) -> float:
        squares = self.spectral_squares(model, x)
        gamma = T.margin_gamma(model, x, y)
        ratio = float((frobenius_squares(model) / squares).sum())
        return float(np.log(squares).sum() - 2 * np.log(gamma) + np.log(ratio))
