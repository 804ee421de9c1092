"""One fingerprint of a model, to key checkpoints of work done on it.

:func:`model_fingerprint` follows a model's weights, not its identity: a
model file or folder (ONNX, safetensors + config, skops, a PGDL model
folder) by the bytes of its files, an in-memory model by its parameters or
state (:func:`fitaudit.checkpoint.fingerprint`). Two copies of the same
weights share a fingerprint; a changed weight changes it.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import Any

from fitaudit._errors import InputError
from fitaudit.checkpoint import fingerprint
from fitaudit.models.dispatch import is_classifier_adapter

_BLOCK = 1 << 20


def file_digest(path: str | os.PathLike[str], *, with_name: bool = True) -> str:
    """SHA-256 of a file's name and bytes, or of a folder's files (relative names and bytes, in sorted order).

    ``with_name=False``: a single file's bytes alone, so a copy under another name has the same digest.
    """
    root = Path(path)
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
    digest = hashlib.sha256()
    for file in files:
        if root.is_dir() or with_name:
            digest.update(str(file.relative_to(root) if root.is_dir() else file.name).encode())
        with open(file, "rb") as handle:
            for block in iter(lambda: handle.read(_BLOCK), b""):
                digest.update(block)
    return digest.hexdigest()


def model_fingerprint(model: Any) -> str:
    """Fingerprint of a model's weights: file bytes for a path, else its parameters or state.

    Parameters
    ----------
    model : path, classifier adapter or native model
        A model file or folder; an adapter from
        :func:`fitaudit.models.as_classifier` (its wrapped model is
        fingerprinted); a torch module, fitted scikit-learn estimator or
        anything :func:`fitaudit.checkpoint.fingerprint` accepts.

    Raises
    ------
    InputError
        When an in-memory model cannot be fingerprinted (e.g. a plain
        callable): pass it as a file path.
    """
    if isinstance(model, (str, os.PathLike)):
        return "file:" + file_digest(model)
    native = getattr(model, "model", model) if is_classifier_adapter(model) else model
    if is_classifier_adapter(model) and getattr(model, "kind", None) == "onnx":
        native = model.fingerprint()  # an onnxruntime session cannot be hashed as it is: the adapter hashes its bytes
    try:
        return fingerprint(native)
    except InputError as exc:
        raise InputError(
            f"cannot fingerprint `model` ({type(native).__name__}) to key checkpoints; "
            "pass it as a file path (ONNX, safetensors folder, skops)."
        ) from exc


def evaluation_fingerprint(model: Any) -> str:
    """:func:`model_fingerprint` plus how the model is run, to key work done through its outputs.

    A torch module's logits depend (within the tolerance of
    :mod:`fitaudit.models.inference`) on the backend and device it runs on,
    so work checkpointed through one is not reused for a run that asks for
    another: the key adds :func:`run_settings`. A torch model folder
    (``config.json``) or module not yet wrapped runs on the process default
    backend (:func:`fitaudit.models.inference.default_backend`) on the CPU.
    ONNX, scikit-learn and callable models run as they are: their key is the
    weights' fingerprint alone.
    """
    if isinstance(model, (str, os.PathLike)):
        is_torch = Path(model).is_dir() and (Path(model) / "config.json").is_file()
    else:
        torch = sys.modules.get("torch")  # a torch module exists only if torch was imported
        is_torch = torch is not None and isinstance(model, torch.nn.Module)
    if is_torch:
        from fitaudit.models.inference import default_backend

        return model_fingerprint(model) + _settings_text(default_backend(), "cpu")
    return model_fingerprint(model) + run_settings(model)


def run_settings(classifier: Any) -> str:
    """``"|backend=auto|device=cpu"`` for a wrapped torch module (what its logits depend on besides the weights); ``""`` otherwise."""
    backend = getattr(classifier, "requested_backend", None)
    return "" if backend is None else _settings_text(backend, getattr(classifier, "device", "cpu"))


def _settings_text(backend: str, device: Any) -> str:
    return f"|backend={backend}|device={device}"
