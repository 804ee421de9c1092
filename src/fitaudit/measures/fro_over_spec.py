"""Sum of Frobenius-over-spectral ratios (Jiang et al. 2020, eq. 33)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures._fantastic import SpectralMeasure, frobenius_squares


class FroOverSpec(SpectralMeasure):
    """sum_i ||W_i||_F^2 / ||W_i||_2^2 (stable ranks), scaled sqrt(v / m)."""

    name: ClassVar[str] = "fro_over_spec"
    needs_data: ClassVar[bool] = False

    def raw(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray) -> float:
        return float((frobenius_squares(model) / self.spectral_squares(model, x)).sum())
