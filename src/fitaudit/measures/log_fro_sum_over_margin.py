"""Margin-normalised log sum of Frobenius norms (Jiang et al. 2020, eq. 38)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures import _torch as T
from fitaudit.measures._fantastic import FantasticMeasure, frobenius_squares, log_sum_form


class LogFroSumOverMargin(FantasticMeasure):
    """log d + (1/d) (sum_i log ||W_i||_F^2 - 2 log gamma), scaled 0.5 (v - log m)."""

    name: ClassVar[str] = "log_fro_sum_over_margin"
    log_scaled: ClassVar[bool] = True

    def raw(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray) -> float:
        squares = frobenius_squares(model)
        gamma = T.margin_gamma(model, x, y)
        return log_sum_form(float(np.log(squares).sum() - 2 * np.log(gamma)), len(squares))
