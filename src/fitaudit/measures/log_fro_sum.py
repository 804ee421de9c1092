"""Log sum of Frobenius norms (Jiang et al. 2020, eq. 39)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures._fantastic import FantasticMeasure, frobenius_squares, log_sum_form


class LogFroSum(FantasticMeasure):
    """log d + (1/d) sum_i log ||W_i||_F^2, scaled 0.5 (v - log m)."""

    name: ClassVar[str] = "log_fro_sum"
    needs_data: ClassVar[bool] = False
    log_scaled: ClassVar[bool] = True

    def raw(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray) -> float:
        squares = frobenius_squares(model)
        return log_sum_form(float(np.log(squares).sum()), len(squares))
