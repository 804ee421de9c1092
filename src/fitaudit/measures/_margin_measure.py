"""The first-place entry's margin measures on modified training batches (private base)."""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import numpy as np

from fitaudit._validation import check_int
from fitaudit.measures import _torch as T
from fitaudit.measures._winners import (
    five_number_mean,
    representation_margins,
    trimmed_feature_scale,
)
from fitaudit.measures.base import Measure, ModelRecord
from fitaudit.random import check_random_state

NATEKAR_REFERENCE = (
    "Natekar & Sharma, Representation based complexity measures (PGDL 1st place), 2020"
)


class RepresentationMarginMeasure(Measure):
    """Minus the summary of normalised margins at the early representation on modified batches.

    ``n_batches`` random batches of ``batch_size`` training examples (the
    entry: 10 of 50), each modified by :meth:`modify`; per example the
    first-order margin distance at the first weight layer's output (see
    :func:`fitaudit.measures._winners.representation_margins`), all divided
    by the square root of the 5%-trimmed mean of that representation's
    per-feature variances; the value is minus the mean of the five-number
    summary (:func:`fitaudit.measures._winners.five_number_mean`). Smaller
    margins = larger value = larger predicted gap.
    """

    needs_grad: ClassVar[bool] = True
    cost: ClassVar[str] = "moderate"
    family: ClassVar[str] = "winners"
    reference: ClassVar[str] = NATEKAR_REFERENCE

    def __init__(self, *, random_state: Any = 0, n_batches: int = 10, batch_size: int = 50) -> None:
        super().__init__(random_state=random_state)
        self.n_batches = check_int(n_batches, "n_batches", minimum=1)
        self.batch_size = check_int(batch_size, "batch_size", minimum=2)

    @abc.abstractmethod
    def modify(self, x: Any, y: np.ndarray, rng: np.random.Generator) -> tuple[Any, np.ndarray]:
        """The modified batch (tensor) and its labels."""

    def check_inputs(self, x: np.ndarray) -> None:
        """Refuse inputs the modification cannot handle (default: anything goes)."""

    def compute(self, record: ModelRecord) -> float:
        x, y = T.check_record_data(record, self.name)
        self.check_inputs(x)
        rng = check_random_state(self.random_state)
        model = T.eval_copy(record.model)
        module = T.early_module(model)
        all_margins, all_features = [], []
        for _ in range(self.n_batches):
            idx = rng.choice(len(x), size=min(self.batch_size, len(x)), replace=False)
            xb, yb = self.modify(T.on_model_device(model, x[idx]), y[idx], rng)
            margins, features = representation_margins(model, module, xb, yb)
            all_margins.append(margins)
            all_features.append(features)
        scale = trimmed_feature_scale(np.concatenate(all_features))
        return -five_number_mean(np.concatenate(all_margins) / (scale + 1e-7))
