"""PAC-Bayes bound around the origin (Jiang et al. 2020, eq. 49)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures._fantastic import PacBayesMeasure, pacbayes_bound, weight_vectors


class PacBayesOrig(PacBayesMeasure):
    """||w||^2 / (4 sigma^2) + log(m / sigma) + 10, scaled sqrt(v / m) (sigma as in pacbayes_init)."""

    name: ClassVar[str] = "pacbayes_orig"

    def bound(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray, sigma: float) -> float:
        w, _ = weight_vectors(model, None)
        return pacbayes_bound(float((w**2).sum()), sigma, len(x))
