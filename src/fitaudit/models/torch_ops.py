"""The torch helpers every torch-running module shares: where a module is, batches sent there, accuracy.

One home for what the trainer (:mod:`fitaudit.models.training`), the model
zoos (:mod:`fitaudit.pgdl.zoo`), the complexity measures
(:mod:`fitaudit.measures`) and the demo each need: the device of a module
(:func:`device_of`), an array or tensor as a float32 tensor on it
(:func:`as_tensor`), and a module's mean cross-entropy and accuracy on
labelled data (:func:`evaluate`, :func:`accuracy`). Batches go to the
module's device and only the sums come back, so a network on a GPU is
scored there. torch is imported lazily.

Examples
--------
>>> import numpy as np, torch
>>> from fitaudit.models.torch_ops import accuracy, device_of
>>> net = torch.nn.Linear(2, 2)
>>> with torch.no_grad():
...     _ = net.weight.copy_(torch.eye(2)); _ = net.bias.zero_()
>>> device_of(net).type
'cpu'
>>> x = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 1.0]], dtype=np.float32)
>>> accuracy(net, x, np.array([0, 1, 1]))  # the arg-max of x itself: right twice in three
0.6666666666666666
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fitaudit._optional import import_optional


def _torch() -> Any:
    return import_optional("torch", "running a torch model")


def device_of(model: Any) -> Any:
    """The device of ``model``'s first parameter or buffer: where its batches go.

    CPU for a module without any, and for anything that is not a
    ``torch.nn.Module`` (an ONNX session wrapped for the measures).
    """
    torch = _torch()
    if isinstance(model, torch.nn.Module):
        for tensor in (*model.parameters(), *model.buffers()):
            return tensor.device
    return torch.device("cpu")


def as_tensor(x: Any, device: Any = None) -> Any:
    """``x`` as a float32 tensor on ``device`` (default CPU; a copy where ``x`` is a read-only array, e.g. a worker's memory map).

    A tensor is moved (a no-op when it is there already), so a batch sent to
    the device once can be handed to every helper.
    """
    torch = _torch()
    if isinstance(x, torch.Tensor):
        return x.to(device=device, dtype=torch.float32) if device is not None else x.float()
    array = np.ascontiguousarray(x, dtype=np.float32)
    if not array.flags.writeable:  # torch would share read-only memory and warn
        array = array.copy()
    tensor = torch.from_numpy(array)
    return tensor if device is None else tensor.to(device)


def evaluate(
    module: Any, x: Any, y: np.ndarray, *, batch_size: int = 512, with_loss: bool = True
) -> tuple[float, float]:
    """(mean cross-entropy, accuracy) of ``module`` in eval mode on ``(x, y)`` (loss NaN without ``with_loss``).

    ``module`` is put in eval mode (batch norm with its running statistics,
    no dropout) and left there; no gradients are kept. ``x`` is an array or
    a tensor (e.g. sent to the device once for many calls), ``y`` integer
    labels on the host. Batches of ``batch_size`` go to the module's device
    (:func:`device_of`); only the sums come back.
    """
    torch = _torch()
    device = device_of(module)
    module.eval()
    loss, correct = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(x), batch_size):
            logits = module(as_tensor(x[start : start + batch_size], device)).float()
            labels = torch.as_tensor(np.asarray(y[start : start + batch_size], dtype=np.int64), device=device)
            if with_loss:
                loss += float(torch.nn.functional.cross_entropy(logits, labels, reduction="sum"))
            correct += int((logits.argmax(1) == labels).sum())
    return (loss / len(x) if with_loss else float("nan")), correct / len(x)


def accuracy(module: Any, x: Any, y: np.ndarray, *, batch_size: int = 512) -> float:
    """Fraction of ``x`` whose arg-max logit is ``y``: :func:`evaluate`'s accuracy (``module`` in eval mode)."""
    return evaluate(module, x, y, batch_size=batch_size, with_loss=False)[1]
