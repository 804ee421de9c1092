"""Adapter for an ONNX model run by onnxruntime."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit.models.base import Classifier, describe_exception
from fitaudit.models.inference.settings import check_backend, default_backend

#: numpy dtype of each ONNX tensor element type the adapter can feed
_INPUT_DTYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16}


def _providers(ort: Any, device: str) -> list[str]:
    if device == "cpu":
        return ["CPUExecutionProvider"]
    if device in ("cuda", "gpu") or device.startswith("cuda:"):
        if "CUDAExecutionProvider" not in ort.get_available_providers():
            raise InputError(
                f"`device` is {device!r} but this onnxruntime has no CUDAExecutionProvider "
                "(install onnxruntime-gpu, or use device='cpu')."
            )
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]
    raise InputError(f"`device` must be 'cpu' or 'cuda' for an ONNX model; got {device!r}.")


def open_session(source: Any, *, device: str = "cpu", name: str = "model", options: Any = None) -> Any:
    """Open an :class:`onnxruntime.InferenceSession` from a path or bytes.

    Parameters
    ----------
    source : path, bytes or InferenceSession
        An existing session is returned unchanged.
    device : str
        ``"cpu"`` (default) or ``"cuda"`` (needs onnxruntime-gpu).
    name : str
        Argument name used in error messages.
    options : onnxruntime.SessionOptions, optional
        E.g. thread counts (onnxruntime's defaults when None).
    """
    ort = import_optional("onnxruntime", "running an ONNX model")
    if isinstance(source, ort.InferenceSession):
        return source
    if not isinstance(source, (bytes, str, os.PathLike)):
        raise InputError(f"`{name}` must be an ONNX file path, bytes or an InferenceSession; got {type(source).__name__}.")
    target = source if isinstance(source, bytes) else os.fspath(source)
    providers = _providers(ort, str(device))
    try:
        return ort.InferenceSession(target, options, providers=providers)
    except Exception as exc:  # onnxruntime raises its own exception types
        where = "the given bytes" if isinstance(source, bytes) else f"file {os.fspath(source)!r}"
        raise InputError(f"`{name}`: {where} could not be opened as an ONNX model ({describe_exception(exc)}).") from exc


class OnnxClassifier(Classifier):
    """An ONNX model with one input and the logits as its first output.

    Parameters
    ----------
    source : path, bytes or onnxruntime.InferenceSession
    n_classes : int, optional
        Defaults to the static width of the first output, or the width of
        the first output computed.
    batch_size : int
    device : str
        ``"cpu"`` (default) or ``"cuda"`` (CUDAExecutionProvider).
    backend : {"auto", "onnx"}, optional
        An ONNX model always runs in onnxruntime; ``"torch"`` (named here or
        the process default, ``--backend torch``) is an :class:`InputError`.
    """

    kind = "onnx"

    def __init__(
        self,
        source: Any,
        *,
        n_classes: int | None = None,
        batch_size: int = 256,
        device: str = "cpu",
        backend: str | None = None,
    ) -> None:
        if (default_backend() if backend is None else check_backend(backend)) == "torch":
            raise InputError(
                "`backend` is 'torch' but the model is an ONNX model, which runs in onnxruntime; "
                "use backend 'onnx' or 'auto'."
            )
        session = open_session(source, device=device)
        inputs = session.get_inputs()
        if len(inputs) != 1:
            names = ", ".join(i.name for i in inputs)
            raise InputError(f"`model` must be an ONNX graph with exactly one input; this one has: {names}.")
        self.input_name = inputs[0].name
        if inputs[0].type not in _INPUT_DTYPES:
            raise InputError(
                f"`model`: the ONNX input {self.input_name!r} has type {inputs[0].type}; "
                "expected a float tensor."
            )
        self.input_dtype = np.dtype(_INPUT_DTYPES[inputs[0].type])
        dims = inputs[0].shape
        if dims:  # static sizes are checked, symbolic ones (strings, None) are free
            self.input_shape = tuple(d if isinstance(d, int) else None for d in dims[1:])
        width = session.get_outputs()[0].shape[-1] if session.get_outputs()[0].shape else None
        if n_classes is None and isinstance(width, int) and width >= 2:
            n_classes = width
        super().__init__(session, n_classes=n_classes, batch_size=batch_size)
        self.device = device

    def _logits_batch(self, x: np.ndarray) -> np.ndarray:
        return self.model.run(None, {self.input_name: x})[0]

    def _fingerprint_source(self) -> Any:
        """The model's bytes (read from its file when the session was opened from a path)."""
        data = getattr(self.model, "_model_bytes", None)
        path = getattr(self.model, "_model_path", None)
        if data is None and path is not None and os.path.isfile(path):
            with open(path, "rb") as handle:
                data = handle.read()
        if data is None:
            raise InputError("`model`: cannot fingerprint this ONNX session (neither its bytes nor its file are known).")
        return bytes(data)
