"""Margin-normalised path norm (Jiang et al. 2020, eq. 43)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures import _torch as T
from fitaudit.measures._fantastic import FantasticMeasure, path_norm


class PathNormOverMargin(FantasticMeasure):
    """Path norm / gamma^2, scaled sqrt(v / m) (gamma: 10th-percentile output margin)."""

    name: ClassVar[str] = "path_norm_over_margin"

    def raw(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray) -> float:
        return path_norm(model, tuple(x.shape[1:])) / T.margin_gamma(model, x, y) ** 2
