"""Number of weights (Jiang et al. 2020, eq. 20: the VC-dimension-style "params" measure)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures import _torch as T
from fitaudit.measures._fantastic import FantasticMeasure


class ParameterCount(FantasticMeasure):
    """Number of weights omega, scaled sqrt(omega / m).

    ``omega`` counts the kernels of convolutions and linear layers after
    batch-norm folding (no biases, no batch-norm parameters), as the
    reference's ``CT.PARAMS``; final value ``sqrt(omega / m)``.
    """

    name: ClassVar[str] = "parameter_count"
    needs_data: ClassVar[bool] = False

    def raw(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray) -> float:
        return float(sum(w.numel() for w in T.weights(model)))
