"""Spectral bound with distance from initialisation (Jiang et al. 2020, eq. 29; Bartlett et al. 2017)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures import _torch as T
from fitaudit.measures._fantastic import SpectralMeasure


class LogSpecInitMain(SpectralMeasure):
    """sum_i log ||W_i||_2^2 - 2 log gamma + log sum_i ||W_i - W0_i||_F^2 / ||W_i||_2^2, scaled 0.5 (v - log m)."""

    name: ClassVar[str] = "log_spec_init_main"
    needs_init: ClassVar[bool] = True
    log_scaled: ClassVar[bool] = True

    def raw(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray) -> float:
        squares = self.spectral_squares(model, x)
        gamma = T.margin_gamma(model, x, y)
        dist = np.asarray(
            [float(((w - w0).double() ** 2).sum()) for w, w0 in T.matched_weights(model, initial)]
        )
        return float(np.log(squares).sum() - 2 * np.log(gamma) + np.log((dist / squares).sum()))
