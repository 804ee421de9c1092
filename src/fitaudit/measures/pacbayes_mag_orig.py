"""Magnitude-aware PAC-Bayes bound around the origin (Jiang et al. 2020, eq. 57)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures._fantastic import PacBayesMeasure, pacbayes_mag_bound, weight_vectors


class PacBayesMagOrig(PacBayesMeasure):
    """1/4 sum_i log((eps^2 + (s^2+1)||w||^2/omega) / (eps^2 + s^2 (w_i-w0_i)^2)) + log(m/s) + 10.

    Scaled sqrt(v / m). As the paper and the reference, the denominator uses
    the distance from initialisation, so this measure needs the initial
    network too.
    """

    name: ClassVar[str] = "pacbayes_mag_orig"
    needs_init: ClassVar[bool] = True
    magnitude_eps: ClassVar[float | None] = 1e-3

    def bound(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray, sigma: float) -> float:
        w, dist = weight_vectors(model, initial)
        return pacbayes_mag_bound(w, dist, sigma, 1e-3, len(x))
