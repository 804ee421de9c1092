"""Sharpness by the clipped-ascent search (the PGDL competition's sharpness baseline)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit._validation import check_float, check_int
from fitaudit.measures import _torch as T
from fitaudit.measures.base import Measure, ModelRecord, register_measure
from fitaudit.random import check_random_state


@register_measure
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
    follow the competition's description (METHODS.md): ascent on ``[0, 0.5]``.
    """

    name: ClassVar[str] = "sharpness"
    needs_grad: ClassVar[bool] = True
    cost: ClassVar[str] = "expensive"
    family: ClassVar[str] = "starting_kit"
    reference: ClassVar[str] = (
        "PGDL competition (Jiang et al., NeurIPS 2020 competition), baselines/sharpness"
    )

    def __init__(
        self,
        *,
        random_state: Any = 0,
        upper: float = 0.5,
        search_depth: int = 20,
        ascent_steps: int = 20,
        lr: float = 1e-3,
        batch_size: int = 64,
        eval_batches: int = 10,
        n_restarts: int = 3,
        target_drop: float = 0.1,
        tolerance: float = 1e-2,
    ) -> None:
        super().__init__(random_state=random_state)
        self.upper = check_float(upper, "upper", low=0, low_inclusive=False)
        self.search_depth = check_int(search_depth, "search_depth", minimum=1)
        self.ascent_steps = check_int(ascent_steps, "ascent_steps", minimum=0)
        self.lr = check_float(lr, "lr", low=0, low_inclusive=False)
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)
        self.eval_batches = check_int(eval_batches, "eval_batches", minimum=1)
        self.n_restarts = check_int(n_restarts, "n_restarts", minimum=1)
        self.target_drop = check_float(target_drop, "target_drop", low=0, high=1)
        self.tolerance = check_float(tolerance, "tolerance", low=0, high=1)

    def compute(self, record: ModelRecord) -> float:
        torch = T.torch_()
        x, y = T.check_record_data(record, self.name)
        rng = check_random_state(self.random_state)
        gen = T.generator(rng)
        model = T.eval_copy(record.model)
        params = list(model.parameters())
        for p in params:
            p.requires_grad_(True)
        originals = [p.detach().clone() for p in params]
        loss_fn = torch.nn.CrossEntropyLoss()
        batch = min(self.batch_size, len(x))
        base = T.accuracy(model, x, y)

        def batch_idx() -> np.ndarray:
            return rng.choice(len(x), size=batch, replace=False)

        def estimate() -> float:
            idx = np.concatenate([batch_idx() for _ in range(self.eval_batches)])
            return T.accuracy(model, x[idx], y[idx])

        def restore() -> None:
            with torch.no_grad():
                for p, w in zip(params, originals):
                    p.copy_(w)

        def drop_at(m: float) -> float:
            worst = np.inf
            for _ in range(self.n_restarts):
                with torch.no_grad():
                    for p, w in zip(params, originals):
                        noise = (torch.rand(w.shape, generator=gen, dtype=w.dtype) - 0.5) * m
                        p.copy_(w + noise * w.abs())
                for _ in range(self.ascent_steps):
                    idx = batch_idx()
                    model.zero_grad(set_to_none=True)
                    loss = loss_fn(model(T.as_tensor(x[idx])), torch.as_tensor(y[idx]))
                    loss.backward()
                    with torch.no_grad():
                        for p, w in zip(params, originals):
                            if p.grad is not None:
                                p.add_(self.lr * p.grad)
                            p.copy_(
                                torch.minimum(torch.maximum(p, w - m * w.abs()), w + m * w.abs())
                            )
                worst = min(worst, estimate())
            restore()
            return base - worst

        m = T.bisect_sigma(
            drop_at,
            lower=0.0,
            upper=self.upper,
            steps=self.search_depth,
            target=self.target_drop,
            tolerance=self.tolerance,
        )
        restore()
        return 1.0 / m
