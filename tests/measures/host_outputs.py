"""The measures' former host path to a network's logits: the tests' reference for the device path.

The measures run a network whose weights stay as they are through
:func:`fitaudit.measures._torch.device_output_function` (the logits stay on
the device); the tests compare it with the same runner's logits brought to
the host as a numpy array, the way the measures read them before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from fitaudit.measures._torch import predict
from fitaudit.models import as_classifier
from fitaudit.models.torch_ops import device_of


def output_function(model: Any) -> Callable[[np.ndarray], np.ndarray]:
    """``f(x) -> logits`` (float32 array) of a model whose weights are not being changed.

    :func:`fitaudit.models.as_classifier` runs ``model`` (put in eval mode)
    on the fastest backend whose logits agree with eager torch on a check
    batch; an ONNX file wrapped for the measures (``model_format = "onnx"``)
    is run by eager :func:`~fitaudit.measures._torch.predict` as it is.
    """
    if getattr(model, "model_format", "torch") != "torch":
        return lambda x: np.asarray(predict(model, x).numpy())
    classifier = as_classifier(model, device=device_of(model))  # as_classifier moves the module: keep it where it is
    return lambda x: np.asarray(classifier.logits(x), dtype=np.float32)
