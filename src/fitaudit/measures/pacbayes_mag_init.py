"""Magnitude-aware PAC-Bayes bound around the initialisation (Jiang et al. 2020, eq. 56)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures._fantastic import PacBayesMeasure, pacbayes_mag_bound, weight_vectors


class PacBayesMagInit(PacBayesMeasure):
    """1/4 sum_i log((eps^2 + (s^2+1)||w-w0||^2/omega) / (eps^2 + s^2 (w_i-w0_i)^2)) + log(m/s) + 10.

    Scaled sqrt(v / m). ``s`` (sigma'): bisection as in ``pacbayes_init`` with
    per-parameter noise of variance ``s^2 w^2 + eps^2``, eps = 1e-3.
    """

    name: ClassVar[str] = "pacbayes_mag_init"
    needs_init: ClassVar[bool] = True
    magnitude_eps: ClassVar[float | None] = 1e-3

    def bound(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray, sigma: float) -> float:
        _, dist = weight_vectors(model, initial)
        return pacbayes_mag_bound(dist, dist, sigma, 1e-3, len(x))
