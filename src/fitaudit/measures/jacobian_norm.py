"""Jacobian norm of the output with respect to intermediate inputs (PGDL starting kit)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fitaudit._validation import check_int
from fitaudit.measures import _torch as T
from fitaudit.measures.base import Measure, ModelRecord

#: leaves that Keras fuses into the previous layer or that have no input of their own there
_SKIPPED = (*T._ACTIVATIONS, "Flatten")


def jacobian_sq_means(model: Any, x: Any) -> list[float]:
    """For each tracked layer, the mean squared entry of d logits / d (layer input) on batch ``x``.

    Tracked layers: every leaf module except activations and Flatten (Keras
    fuses activations into the layer before them). The Jacobian of one
    example's logits (k) with respect to its own layer input (D entries):
    the mean is over examples, logits and entries.
    """
    torch = T.torch_()
    tracked = [m for m in T.leaf_modules(model) if type(m).__name__ not in _SKIPPED]
    inputs: dict[int, Any] = {}

    def hook(module: Any, args: Any) -> None:
        inputs.setdefault(id(module), args[0])

    handles = [m.register_forward_pre_hook(hook) for m in tracked]
    try:
        logits = model(x.detach().clone().requires_grad_(True))
    finally:
        for h in handles:
            h.remove()
    tensors = [inputs[id(m)] for m in tracked if id(m) in inputs]
    sums = [0.0] * len(tensors)
    k = logits.shape[1]
    for c in range(k):
        grads = torch.autograd.grad(
            logits[:, c].sum(), tensors, retain_graph=True, allow_unused=True
        )
        for i, g in enumerate(grads):
            if g is not None:
                sums[i] += float((g.double() ** 2).sum())
    return [s / (k * t.numel()) for s, t in zip(sums, tensors)]


class JacobianNorm(Measure):
    """Mean over layers and examples of the mean squared entry of d logits / d (layer input).

    The PGDL starting kit's Jacobian measure: ``tape.batch_jacobian(out,
    layer._last_seen_input)`` for every layer, ``mean(square(J))`` per layer,
    averaged over layers, then over batches of 16 training examples (the
    first 33 batches, 528 examples, in order). The first layer's input is the
    network input.

    Parameters
    ----------
    n_batches, batch_size : int
        Batches of training examples (default 33 of 16, as the kit).
    """

    name: ClassVar[str] = "jacobian_norm"
    needs_grad: ClassVar[bool] = True
    cost: ClassVar[str] = "moderate"
    family: ClassVar[str] = "starting_kit"
    reference: ClassVar[str] = (
        "PGDL competition starting kit (Jiang et al., NeurIPS 2020 competition)"
    )

    def __init__(self, *, random_state: Any = 0, n_batches: int = 33, batch_size: int = 16) -> None:
        super().__init__(random_state=random_state)
        self.n_batches = check_int(n_batches, "n_batches", minimum=1)
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)

    def compute(self, record: ModelRecord) -> float:
        x, _ = T.check_record_data(record, self.name)
        model = T.eval_copy(record.model)
        values = []
        for b, sl in enumerate(T.iterate_batches(len(x), self.batch_size)):
            if b == self.n_batches:
                break
            values.append(float(np.mean(jacobian_sq_means(model, T.on_model_device(model, x[sl])))))
        return float(np.mean(values))
