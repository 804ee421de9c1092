"""PAC-Bayes flatness 1 / sigma^2 (Jiang et al. 2020, eq. 53)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures import _torch as T
from fitaudit.measures._fantastic import PacBayesMeasure


class PacBayesFlatness(PacBayesMeasure):
    """1 / sigma^2, scaled sqrt(v / m): a sharper minimum (smaller sigma) predicts a larger gap."""

    name: ClassVar[str] = "pacbayes_flatness"

    def bound(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray, sigma: float) -> float:
        return 1.0 / sigma ** 2

    def saturation_value(self, n_examples: int) -> float | None:
        """The scaled 1 / sigma^2 at the search's upper end, 2 (1 - 2**-search_depth): no noise up to 2 cost 0.1 accuracy."""
        return T.fantastic_scale(1.0 / (2.0 * (1 - 2.0**-self.search_depth)) ** 2, n_examples, self.log_scaled)
