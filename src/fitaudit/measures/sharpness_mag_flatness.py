"""Magnitude-aware worst-case flatness 1 / alpha'^2 (Jiang et al. 2020)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures import _torch as T
from fitaudit.measures._ascent import (
    AscentSettings,
    largest_harmless_box,
    magnitude_box,
    search_bound,
)
from fitaudit.measures._fantastic import FantasticMeasure
from fitaudit.random import check_random_state


class SharpnessMagFlatness(FantasticMeasure):
    """1 / alpha'^2, scaled sqrt(v / m), for the box |nu_i| <= alpha |w_i| + eps (eps = 1e-3).

    The magnitude-aware form of ``sharpness_flatness`` (same search, box
    relative to each weight plus eps, alpha in [0, 2], on the
    batch-norm-folded network). Compare ``sharpness``, the PGDL baseline:
    the same relative box without eps, ``1 / alpha'`` unscaled, unfolded.
    """

    name: ClassVar[str] = "sharpness_mag_flatness"
    needs_grad: ClassVar[bool] = True
    cost: ClassVar[str] = "expensive"

    def __init__(self, *, random_state: Any = 0, **settings: Any) -> None:
        super().__init__(random_state=random_state)
        self.settings = AscentSettings(**{"upper": 2.0, **settings})

    def raw(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray) -> float:
        rng = check_random_state(self.random_state)
        return 1.0 / largest_harmless_box(model, x, y, magnitude_box, self.settings, rng) ** 2

    def saturation_value(self, n_examples: int) -> float | None:
        """The scaled ``1 / alpha'^2`` at ``alpha' = upper (1 - 2**-search_depth)`` (no box up to ``upper`` cost 0.1 accuracy)."""
        return T.fantastic_scale(1.0 / search_bound(self.settings) ** 2, n_examples, self.log_scaled)
