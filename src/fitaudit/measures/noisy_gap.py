"""The true generalization gap plus Gaussian noise (the PGDL competition's cheating strong baseline)."""

from __future__ import annotations

import hashlib
from typing import Any, ClassVar

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import check_float
from fitaudit.measures.base import Measure, ModelRecord
from fitaudit.random import check_random_state


class NoisyGap(Measure):
    """(train_acc - test_acc) + N(0, noise_std^2): the gap itself, blurred.

    Reads ``record.metrics["test_acc"]``, which no honest measure may do: it
    is the ceiling a measure can be compared with. The noise of each model is
    drawn from a seed derived from ``random_state`` *and* the model's id, so
    models get independent noise and the same call gives the same value.

    Parameters
    ----------
    noise_std : float
        Standard deviation of the added noise (accuracy units; default 0.01).
    """

    name: ClassVar[str] = "noisy_gap"
    formats: ClassVar[tuple[str, ...]] = ("torch", "onnx")  # reads only the recorded accuracies
    needs_data: ClassVar[bool] = False
    family: ClassVar[str] = "baseline"
    reference: ClassVar[str] = (
        "PGDL competition (Jiang et al., NeurIPS 2020 competition), true gap + noise baseline"
    )

    def __init__(self, *, random_state: Any = 0, noise_std: float = 0.01) -> None:
        super().__init__(random_state=random_state)
        self.noise_std = check_float(noise_std, "noise_std", low=0)

    def compute(self, record: ModelRecord) -> float:
        metrics = record.metrics or {}
        missing = [k for k in ("train_acc", "test_acc") if k not in metrics]
        if missing:
            raise InputError(
                f"measure 'noisy_gap' needs `record.metrics` with {', '.join(repr(k) for k in missing)}; "
                f"got keys {sorted(metrics)}."
            )
        gap = float(metrics["train_acc"]) - float(metrics["test_acc"])
        base = check_random_state(self.random_state)
        salt = int.from_bytes(hashlib.sha256(str(record.model_id).encode()).digest()[:8], "little")
        rng = np.random.default_rng([int(base.integers(0, 2**63)), salt])
        return gap + float(rng.normal(0.0, self.noise_std)) if self.noise_std > 0 else gap
