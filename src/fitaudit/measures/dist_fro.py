"""Frobenius distance from initialisation (Jiang et al. 2020, eq. 40)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures import _torch as T
from fitaudit.measures._fantastic import FantasticMeasure


class DistFro(FantasticMeasure):
    """sum_i ||W_i - W0_i||_F^2 (both networks batch-norm folded), scaled sqrt(v / m)."""

    name: ClassVar[str] = "dist_fro"
    needs_data: ClassVar[bool] = False
    needs_init: ClassVar[bool] = True

    def raw(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray) -> float:
        return float(
            sum(
                float(((w - w0).double() ** 2).sum()) for w, w0 in T.matched_weights(model, initial)
            )
        )
