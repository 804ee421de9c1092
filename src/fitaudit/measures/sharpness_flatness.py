"""Worst-case flatness 1 / alpha'^2 (Jiang et al. 2020, "sharpness flatness")."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures import _torch as T
from fitaudit.measures._ascent import (
    AscentSettings,
    absolute_box,
    largest_harmless_box,
    search_bound,
)
from fitaudit.measures._fantastic import FantasticMeasure
from fitaudit.random import check_random_state


class SharpnessFlatness(FantasticMeasure):
    """1 / alpha'^2, scaled sqrt(v / m): alpha' the largest box |nu_i| <= alpha costing 0.1 accuracy.

    Jiang et al. (2020)'s worst-case sharpness measures bound the loss
    under the *worst* perturbation in an L-infinity box of radius alpha
    around the weights (found by loss ascent), against the PAC-Bayes
    measures' *average* Gaussian perturbation. The Fantastic reference code
    has no sharpness measures, so alpha' is found by the same clipped-ascent
    search as the PGDL sharpness baseline
    (:func:`fitaudit.measures._ascent.largest_harmless_box`: bisection,
    20 SGD ascent steps per trial, accuracy drop 0.1), with an absolute box
    ``w +- alpha`` on the batch-norm-folded network's parameters, ``alpha``
    in [0, 2] (the PAC-Bayes search's interval). Sharper = smaller alpha' =
    larger value.
    """

    name: ClassVar[str] = "sharpness_flatness"
    needs_grad: ClassVar[bool] = True
    cost: ClassVar[str] = "expensive"

    def __init__(self, *, random_state: Any = 0, **settings: Any) -> None:
        super().__init__(random_state=random_state)
        self.settings = AscentSettings(**{"upper": 2.0, **settings})

    def raw(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray) -> float:
        rng = check_random_state(self.random_state)
        return 1.0 / largest_harmless_box(model, x, y, absolute_box, self.settings, rng) ** 2

    def saturation_value(self, n_examples: int) -> float | None:
        """The scaled ``1 / alpha'^2`` at ``alpha' = upper (1 - 2**-search_depth)`` (no box up to ``upper`` cost 0.1 accuracy)."""
        return T.fantastic_scale(1.0 / search_bound(self.settings) ** 2, n_examples, self.log_scaled)
