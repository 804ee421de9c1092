"""Margin-normalised log product of Frobenius norms (Jiang et al. 2020, eq. 36)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures import _torch as T
from fitaudit.measures._fantastic import FantasticMeasure, frobenius_squares


class LogFroProductOverMargin(FantasticMeasure):
    """sum_i log ||W_i||_F^2 - 2 log gamma, scaled 0.5 (v - log m)."""

    name: ClassVar[str] = "log_fro_product_over_margin"
    log_scaled: ClassVar[bool] = True

    def raw(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray) -> float:
        return float(
            np.log(frobenius_squares(model)).sum() - 2 * np.log(T.margin_gamma(model, x, y))
        )
