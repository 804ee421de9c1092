"""Clipped loss-ascent search for the largest harmless weight box (private; sharpness measures)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from fitaudit._validation import check_float, check_int
from fitaudit.measures import _torch as T
from fitaudit.models.torch_ops import accuracy

#: half-width of the box around the trained weights ``w`` at scale ``a``
Box = Callable[[Any, float], Any]


def relative_box(w: Any, a: float) -> Any:
    """``a |w|`` (the PGDL sharpness baseline)."""
    return a * w.abs()


def absolute_box(w: Any, a: float) -> Any:
    """``a`` for every weight (Jiang et al.'s worst-case sharpness)."""
    return a * w.new_ones(w.shape)


def magnitude_box(w: Any, a: float, eps: float = 1e-3) -> Any:
    """``a |w| + eps`` (Jiang et al.'s magnitude-aware worst-case sharpness)."""
    return a * w.abs() + eps


class AscentSettings:
    """Settings of :func:`largest_harmless_box` (checked).

    Defaults: the PGDL sharpness baseline's (bisection <= 20 steps, 20 SGD
    ascent steps of lr 1e-3 on batches of 64, accuracy on 10 batches, 3
    restarts, target drop 0.1 within 1e-2).
    """

    def __init__(
        self,
        *,
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
        self.upper = check_float(upper, "upper", low=0, low_inclusive=False)
        self.search_depth = check_int(search_depth, "search_depth", minimum=1)
        self.ascent_steps = check_int(ascent_steps, "ascent_steps", minimum=0)
        self.lr = check_float(lr, "lr", low=0, low_inclusive=False)
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)
        self.eval_batches = check_int(eval_batches, "eval_batches", minimum=1)
        self.n_restarts = check_int(n_restarts, "n_restarts", minimum=1)
        self.target_drop = check_float(target_drop, "target_drop", low=0, high=1)
        self.tolerance = check_float(tolerance, "tolerance", low=0, high=1)


def search_bound(settings: AscentSettings) -> float:
    """The scale :func:`largest_harmless_box` returns when no trial reaches the target drop.

    The bisection then always moves up, ending at the last midpoint
    ``upper (1 - 2**-search_depth)``.
    """
    return settings.upper * (1 - 2.0**-settings.search_depth)


def largest_harmless_box(
    model: Any,
    x: np.ndarray,
    y: np.ndarray,
    box: Box,
    settings: AscentSettings,
    rng: np.random.Generator,
) -> float:
    """The scale ``a`` whose box ``w +- box(w, a)`` lets loss ascent cost 0.1 of training accuracy.

    Bisection on ``a`` in ``[0, upper]``; for each ``a`` and each restart:
    every parameter starts at ``w + U(-h/2, h/2)`` (``h = box(w, a)``),
    then ``ascent_steps`` SGD steps *up* the cross-entropy on random
    batches, each followed by clipping to ``[w - h, w + h]``; the accuracy
    on ``eval_batches`` random batches, the lowest over restarts. Drop =
    training accuracy of ``model`` minus that. The network is in eval mode
    (batch norm with its running statistics, no dropout).
    """
    torch = T.torch_()
    gen = T.generator(rng)
    net = T.eval_copy(model)
    params = list(net.parameters())
    for p in params:
        p.requires_grad_(True)
    originals = [p.detach().clone() for p in params]
    loss_fn = torch.nn.CrossEntropyLoss()
    batch = min(settings.batch_size, len(x))
    base = accuracy(net, x, y)

    def batch_idx() -> np.ndarray:
        return rng.choice(len(x), size=batch, replace=False)

    def drop_at(a: float) -> float:
        worst = np.inf
        for _ in range(settings.n_restarts):
            halves = [box(w, a) for w in originals]
            with torch.no_grad():
                for p, w, h in zip(params, originals, halves):
                    p.copy_(w + (torch.rand(w.shape, generator=gen, dtype=w.dtype).to(w.device) - 0.5) * h)
            for _ in range(settings.ascent_steps):
                idx = batch_idx()
                net.zero_grad(set_to_none=True)
                loss_fn(net(T.on_model_device(net, x[idx])), T.labels_on(net, y[idx])).backward()
                with torch.no_grad():
                    for p, w, h in zip(params, originals, halves):
                        if p.grad is not None:
                            p.add_(settings.lr * p.grad)
                        p.copy_(torch.minimum(torch.maximum(p, w - h), w + h))
            idx = np.concatenate([batch_idx() for _ in range(settings.eval_batches)])
            worst = min(worst, accuracy(net, x[idx], y[idx]))
        with torch.no_grad():
            for p, w in zip(params, originals):
                p.copy_(w)
        return base - worst

    return T.bisect_sigma(
        drop_at,
        lower=0.0,
        upper=settings.upper,
        steps=settings.search_depth,
        target=settings.target_drop,
        tolerance=settings.tolerance,
    )
