"""Squared distance from initialisation (the PGDL starting kit's example measure)."""

from __future__ import annotations

from typing import ClassVar

from fitaudit.measures import _torch as T
from fitaudit.measures.base import Measure, ModelRecord


class DistanceFromInit(Measure):
    """sum over every trainable parameter of ||w - w0||^2 (no folding, no scaling).

    As the PGDL starting kit: all trainable variables of the network
    (kernels, biases, batch-norm scales and shifts), the trained minus the
    initial values. Compare ``dist_fro`` (Jiang et al.: kernels only, batch
    norm folded, scaled by the number of examples).
    """

    name: ClassVar[str] = "distance_from_init"
    needs_data: ClassVar[bool] = False
    needs_init: ClassVar[bool] = True
    family: ClassVar[str] = "starting_kit"
    reference: ClassVar[str] = (
        "PGDL competition starting kit (Jiang et al., NeurIPS 2020 competition)"
    )

    def compute(self, record: ModelRecord) -> float:
        pairs = T.matched_parameters(record.model, record.initial_model)
        return float(sum(float(((p - q).double() ** 2).sum()) for p, q in pairs))
