"""Adapter for a plain function ``f(x) -> scores``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from fitaudit.models.base import Classifier


class CallableClassifier(Classifier):
    """A function mapping a batch ``x`` of shape ``(b, ...)`` to scores ``(b, k)``.

    The scores are used as logits (pass log-probabilities if the function
    returns probabilities). The batch is handed over as a numpy array with
    the caller's dtype.

    Parameters
    ----------
    func : callable
    n_classes : int, optional
        Defaults to the width of the first output.
    batch_size : int
    """

    kind = "callable"

    def __init__(
        self, func: Callable[[np.ndarray], Any], *, n_classes: int | None = None, batch_size: int = 256
    ) -> None:
        super().__init__(func, n_classes=n_classes, batch_size=batch_size)

    def _logits_batch(self, x: np.ndarray) -> Any:
        return self.model(x)
