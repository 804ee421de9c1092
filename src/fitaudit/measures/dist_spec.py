"""Spectral distance from initialisation (Jiang et al. 2020, eq. 41)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures import _torch as T
from fitaudit.measures._fantastic import SpectralMeasure


class DistSpec(SpectralMeasure):
    """sum_i ||W_i - W0_i||_2^2 (reshaped to (out, -1), or exact FFT spectrum), scaled sqrt(v / m)."""

    name: ClassVar[str] = "dist_spec"
    needs_data: ClassVar[bool] = False
    needs_init: ClassVar[bool] = True

    def raw(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray) -> float:
        torch = T.torch_()
        diff = T.eval_copy(model)
        with torch.no_grad():
            for layer, (w, w0) in zip(T.weight_layers(diff), T.matched_weights(model, initial)):
                layer.weight.copy_(w - w0)
        return float(self.spectral_squares(diff, x).sum())
