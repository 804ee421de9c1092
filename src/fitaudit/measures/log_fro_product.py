"""Log product of Frobenius norms (Jiang et al. 2020, eq. 37)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures._fantastic import FantasticMeasure, frobenius_squares


class LogFroProduct(FantasticMeasure):
    """sum_i log ||W_i||_F^2 over the weights (batch norm folded), scaled 0.5 (v - log m)."""

    name: ClassVar[str] = "log_fro_product"
    needs_data: ClassVar[bool] = False
    log_scaled: ClassVar[bool] = True

    def raw(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray) -> float:
        return float(np.log(frobenius_squares(model)).sum())
