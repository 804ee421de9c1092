"""Adapter for a torch ``nn.Module`` (eval mode, inference mode, one device)."""

from __future__ import annotations

from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit.models.base import Classifier


def resolve_device(device: Any) -> Any:
    """Return ``torch.device(device)``, checking that the device exists.

    Parameters
    ----------
    device : str or torch.device
        ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``, ...
    """
    torch = import_optional("torch", "running a torch model")
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise InputError(f"`device` must name a torch device such as 'cpu' or 'cuda:0'; got {device!r}.") from exc
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            raise InputError(
                f"`device` is {device!r} but torch sees no CUDA device on this machine; use device='cpu'."
            )
        count = torch.cuda.device_count()
        if resolved.index is not None and resolved.index >= count:
            raise InputError(f"`device` is {device!r} but only {count} CUDA device(s) exist.")
    elif resolved.type == "mps" and not torch.backends.mps.is_available():
        raise InputError(f"`device` is {device!r} but the MPS backend is not available; use device='cpu'.")
    return resolved


def _output_width(module: Any) -> int | None:
    """``out_features`` of the last linear layer, a guess of the class count."""
    width = None
    for layer in module.modules():
        if isinstance(getattr(layer, "out_features", None), int):
            width = layer.out_features
    return width


class TorchClassifier(Classifier):
    """A torch ``nn.Module`` returning logits of shape ``(n, k)``.

    The module is put in eval mode and moved to ``device`` (both in place);
    batches run under :func:`torch.inference_mode`. Inputs are cast to the
    dtype of the module's floating parameters (float32 for most models);
    logits come back as float64 numpy arrays.

    Parameters
    ----------
    module : torch.nn.Module
    n_classes : int, optional
        Defaults to ``out_features`` of the last linear layer, or the width
        of the first output.
    batch_size : int
    device : str or torch.device
    """

    kind = "torch"

    def __init__(
        self, module: Any, *, n_classes: int | None = None, batch_size: int = 256, device: Any = "cpu"
    ) -> None:
        torch = import_optional("torch", "running a torch model")
        if not isinstance(module, torch.nn.Module):
            raise InputError(f"`model` must be a torch.nn.Module; got {type(module).__name__}.")
        if n_classes is None:
            n_classes = _output_width(module)
        super().__init__(module, n_classes=n_classes, batch_size=batch_size)
        self.device = resolve_device(device)
        module.eval()
        module.to(self.device)
        floating = [p.dtype for p in module.parameters() if p.is_floating_point()]
        self._torch_dtype = floating[0] if floating else torch.float32
        wide = self._torch_dtype == torch.float64
        self.input_dtype = np.dtype(np.float64 if wide else np.float32)

    def _logits_batch(self, x: np.ndarray) -> np.ndarray:
        torch = import_optional("torch", "running a torch model")
        with torch.inference_mode():
            output = self.model(torch.from_numpy(x).to(self.device, self._torch_dtype))
        if not isinstance(output, torch.Tensor):
            raise InputError(
                f"the torch model must return one tensor of logits; it returned {type(output).__name__}."
            )
        return output.detach().to("cpu", torch.float64).numpy()
