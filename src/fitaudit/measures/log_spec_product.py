"""Log product of spectral norms (Jiang et al. 2020, eq. 32)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures._fantastic import SpectralMeasure


class LogSpecProduct(SpectralMeasure):
    """Log product of squared spectral norms: sum_i log ||W_i||_2^2, scaled 0.5 (v - log m).

    ``W_i`` is each layer's weight reshaped to ``(out, -1)`` after batch-norm
    folding (``exact_conv=True``: the exact convolution spectrum by FFT).
    """

    name: ClassVar[str] = "log_spec_product"
    needs_data: ClassVar[bool] = False
    log_scaled: ClassVar[bool] = True

    def raw(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray) -> float:
        return float(np.log(self.spectral_squares(model, x)).sum())
