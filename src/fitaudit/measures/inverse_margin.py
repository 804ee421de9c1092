"""Inverse output margin 1 / gamma^2 (Jiang et al. 2020, eq. 22)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures import _torch as T
from fitaudit.measures._fantastic import FantasticMeasure


class InverseMargin(FantasticMeasure):
    """Inverse squared margin 1 / gamma^2, scaled sqrt(v / m).

    ``gamma`` = |10th percentile over the training set of (true-class logit -
    largest other logit)| (the reference: ``kthvalue(margins, m // 10)``,
    absolute value), on the batch-norm-folded network.
    """

    name: ClassVar[str] = "inverse_margin"
    formats: ClassVar[tuple[str, ...]] = ("torch", "onnx")  # reads only outputs

    def raw(self, model: Any, initial: Any, x: np.ndarray, y: np.ndarray) -> float:
        return 1.0 / T.margin_gamma(model, x, y) ** 2
