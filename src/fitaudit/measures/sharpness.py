"""Sharpness by the clipped-ascent search (the PGDL competition's sharpness baseline)."""

from __future__ import annotations

from typing import Any, ClassVar

from fitaudit.measures import _torch as T
from fitaudit.measures._ascent import (
    AscentSettings,
    largest_harmless_box,
    relative_box,
    search_bound,
)
from fitaudit.measures.base import Measure, ModelRecord
from fitaudit.random import check_random_state


class Sharpness(Measure):
    """1 / m, m the largest relative box around the weights where loss ascent costs 0.1 accuracy.

    The PGDL baseline (``baselines/sharpness``): bisection on ``m`` in
    ``[0, 0.5]`` (at most 20 steps; stop when the accuracy drop is within
    1e-2 of 0.1). For each ``m``: start from ``w0 + U(-m/2, m/2) |w0|``
    (``w0`` the trained parameters, all of them), then 20 steps of SGD
    *ascent* on the cross-entropy (lr 1e-3, random batches of 64), clipping
    every parameter to ``[w0 - m |w0|, w0 + m |w0|]`` after each step;
    accuracy on 10 random batches of 64; ``n_restarts`` starts, keeping the
    lowest accuracy (the baseline uses 3). Drop = training accuracy of the
    trained network minus that (the baseline assumes a training accuracy
    of 1). A larger ``m`` is a
    flatter minimum, so the measure is ``1 / m`` (larger = sharper = larger
    predicted gap). The network is in eval mode (batch norm uses its running
    statistics, dropout off), as the Keras model called without
    ``training=True``.

    Deviations: the baseline's code bisects on ``[0, 2]`` with 10 steps and
    its optimizer step *descends* the loss (Keras ``apply_gradients``); we
    ascend the loss on ``[0, 0.5]`` (docs/measures.md#the-starting-kit-and-the-competitions-baselines).

    Parameters
    ----------
    upper, search_depth, ascent_steps, lr, batch_size, eval_batches, n_restarts, target_drop, tolerance
        See :class:`fitaudit.measures._ascent.AscentSettings` (defaults as
        above).
    """

    name: ClassVar[str] = "sharpness"
    needs_grad: ClassVar[bool] = True
    cost: ClassVar[str] = "expensive"
    family: ClassVar[str] = "starting_kit"
    reference: ClassVar[str] = (
        "PGDL competition (Jiang et al., NeurIPS 2020 competition), baselines/sharpness"
    )

    def __init__(self, *, random_state: Any = 0, **settings: Any) -> None:
        super().__init__(random_state=random_state)
        self.settings = AscentSettings(**settings)

    def compute(self, record: ModelRecord) -> float:
        x, y = T.check_record_data(record, self.name)
        rng = check_random_state(self.random_state)
        return 1.0 / largest_harmless_box(record.model, x, y, relative_box, self.settings, rng)

    def saturation_value(self, n_examples: int) -> float | None:
        """``1 / (upper (1 - 2**-search_depth))``: no box up to ``upper`` cost 0.1 accuracy (2.000001907 by default)."""
        return 1.0 / search_bound(self.settings)
