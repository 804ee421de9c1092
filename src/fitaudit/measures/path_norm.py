"""Path norm (Jiang et al. 2020, eq. 44; Neyshabur et al. 2015)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures._fantastic import FantasticMeasure, path_norm


class PathNorm(FantasticMeasure):
    """Path norm: every parameter squared (biases included), all-ones input, outputs summed; sqrt(v / m).

    For a ReLU network without pooling this is sum over input-output paths
    of the product of squared weights on the path (biases start paths).
    """

    name: ClassVar[str] = "path_norm"

    def raw(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray) -> float:
        return path_norm(model, tuple(x.shape[1:]))
