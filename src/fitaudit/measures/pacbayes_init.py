"""PAC-Bayes bound around the initialisation (Jiang et al. 2020, eq. 48)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures._fantastic import PacBayesMeasure, pacbayes_bound, weight_vectors


class PacBayesInit(PacBayesMeasure):
    """||w - w0||^2 / (4 sigma^2) + log(m / sigma) + 10, scaled sqrt(v / m).

    ``sigma``: the largest isotropic Gaussian noise (standard deviation, by
    bisection on [0, 2], 15 steps, 10 Monte-Carlo draws) at which training
    accuracy drops by 0.1 (tolerance 0.01); see
    :func:`fitaudit.measures._fantastic.pacbayes_sigma` for the reference's
    sigma^2-as-standard-deviation quirk and our choice.
    """

    name: ClassVar[str] = "pacbayes_init"
    needs_init: ClassVar[bool] = True

    def bound(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray, sigma: float) -> float:
        _, dist = weight_vectors(model, initial)
        return pacbayes_bound(float((dist**2).sum()), sigma, len(x))
