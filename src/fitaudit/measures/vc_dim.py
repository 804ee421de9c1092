"""VC-dimension bound of the network (the PGDL competition's weak baseline)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from fitaudit.measures import _torch as T
from fitaudit.measures.base import Measure, ModelRecord


class VCDimension(Measure):
    """Upper bound on the VC dimension of a ReLU convnet: d + 2 d log(22 d P) N.

    As the competition's ``baselines/vc_dim/complexity.py`` (after Bartlett
    et al., JMLR 2019, piecewise-linear networks): ``d`` = number of kernels
    (convolution and dense weights), ``N`` = their total number of entries,
    and ``P`` the number of input pixels. The baseline hard-codes ``P = 32 **
    2`` (its CIFAR-10/SVHN tasks); we use the input's ``H * W`` (the same
    number on 32x32 images) and ``P = 1`` for vector inputs. Biases and batch
    norm are not counted, as there.
    """

    name: ClassVar[str] = "vc_dim"
    needs_data: ClassVar[bool] = False
    family: ClassVar[str] = "baseline"
    reference: ClassVar[str] = (
        "PGDL competition (Jiang et al., NeurIPS 2020 competition), baselines/vc_dim"
    )

    def compute(self, record: ModelRecord) -> float:
        x = np.asarray(record.train_x)
        pixels = int(np.prod(x.shape[-2:])) if x.ndim >= 4 else 1
        kernels = T.weights(record.model)
        d = len(kernels)
        total = sum(int(w.numel()) for w in kernels)
        return float(d + 2 * d * np.log(22 * d * pixels) * total)
