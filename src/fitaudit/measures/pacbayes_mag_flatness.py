"""Magnitude-aware PAC-Bayes flatness 1 / sigma'^2 (Jiang et al. 2020, eq. 61)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures import _torch as T
from fitaudit.measures._fantastic import PacBayesMeasure


class PacBayesMagFlatness(PacBayesMeasure):
    """1 / sigma'^2, scaled sqrt(v / m); sigma' from the magnitude-aware search (eps = 1e-3)."""

    name: ClassVar[str] = "pacbayes_mag_flatness"
    magnitude_eps: ClassVar[float | None] = 1e-3

    def bound(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray, sigma: float) -> float:
        return 1.0 / sigma ** 2

    def saturation_value(self, n_examples: int) -> float | None:
        """The scaled 1 / sigma^2 at the search's upper end, 2 (1 - 2**-search_depth): no noise up to 2 cost 0.1 accuracy."""
        return T.fantastic_scale(1.0 / (2.0 * (1 - 2.0**-self.search_depth)) ** 2, n_examples, self.log_scaled)
