"""Margin on label-wise mixed-up batches (Natekar & Sharma, PGDL first place's mixup margin)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit.measures._margin_measure import RepresentationMarginMeasure


def labelwise_midpoints(x: Any, y: np.ndarray, rng: np.random.Generator) -> tuple[Any, np.ndarray]:
    """Sort by label; each example averaged with a random same-class partner (the entry's
    ``batchMixupLabelwiseLinear``: a random permutation within each class, itself possibly)."""
    order = np.argsort(y, kind="stable")
    ys = y[order]
    partner = order.copy()
    for c in np.unique(ys):
        block = np.flatnonzero(ys == c)
        partner[block] = order[rng.permutation(block)]
    return (x[order] + x[partner]) / 2, ys


class MixupMargin(RepresentationMarginMeasure):
    """Minus the five-number-summary mean of normalised early-layer margins on label-wise mixup batches.

    See :class:`~fitaudit.measures._margin_measure.RepresentationMarginMeasure`;
    each batch is replaced by midpoints of same-class pairs
    (:func:`labelwise_midpoints`), labels kept.
    """

    name: ClassVar[str] = "mixup_margin"

    def modify(self, x: Any, y: np.ndarray, rng: np.random.Generator) -> tuple[Any, np.ndarray]:
        return labelwise_midpoints(x, y, rng)
