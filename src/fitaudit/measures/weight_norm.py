"""Sum of squared weight norms (the PGDL starting kit's example measure)."""

from __future__ import annotations

from typing import ClassVar

from fitaudit.measures import _torch as T
from fitaudit.measures.base import Measure, ModelRecord


class WeightNorm(Measure):
    """sum over every trainable parameter of ||w||^2 (kernels, biases, batch norm; no folding, no scaling).

    Compare ``param_norm`` (Jiang et al.: kernels only, batch norm folded,
    scaled by the number of examples).
    """

    name: ClassVar[str] = "weight_norm"
    needs_data: ClassVar[bool] = False
    family: ClassVar[str] = "starting_kit"
    reference: ClassVar[str] = (
        "PGDL competition starting kit (Jiang et al., NeurIPS 2020 competition)"
    )

    def compute(self, record: ModelRecord) -> float:
        return float(sum(float((p.double() ** 2).sum()) for p in T.parameters(record.model)))
