"""Sum of squared Frobenius norms of the weights (Jiang et al. 2020, eq. 42)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures._fantastic import FantasticMeasure, frobenius_squares


class ParamNorm(FantasticMeasure):
    """sum_i ||W_i||_F^2 over the weights (batch norm folded, no biases), scaled sqrt(v / m)."""

    name: ClassVar[str] = "param_norm"
    needs_data: ClassVar[bool] = False

    def raw(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray) -> float:
        return float(frobenius_squares(model).sum())
