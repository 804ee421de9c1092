"""One fingerprint of a model, to key checkpoints of work done on it.

:func:`model_fingerprint` follows a model's weights, not its identity: a
model file or folder (ONNX, safetensors + config, skops, a PGDL model
folder) by the bytes of its files, an in-memory model by its parameters or
state (:func:`fitaudit.checkpoint.fingerprint`). Two copies of the same
weights share a fingerprint; a changed weight changes it. Which files a
saved model is made of is its format's to say
(:data:`fitaudit.models.formats.FORMATS`): an ONNX file whose tensors live
in external data files (``weights.bin`` beside it, as models over 2 GB
must) is hashed with those files
(:func:`fitaudit.models.onnx_files.onnx_external_files`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from fitaudit._errors import InputError
from fitaudit.checkpoint import fingerprint
from fitaudit.models.base import is_classifier_adapter
from fitaudit.models.digest import files_digest, run_files_digest
from fitaudit.models.formats import find_format


def _companions(path: Path) -> list[Path]:
    """The files beside a model file that its format makes part of the model (none for a folder)."""
    found = find_format(path) if path.is_file() else None
    return [] if found is None else found.companion_files(path)


def file_digest(path: str | os.PathLike[str], *, with_name: bool = True) -> str:
    """SHA-256 of a file's name and bytes, or of a model folder's files (relative names and bytes, in sorted
    order; only the files a format reads, :func:`fitaudit.models.digest.model_folder_files`).

    ``with_name=False``: a single file's bytes alone, so a copy under another name has the same digest.
    The files its format makes part of the model (an ``.onnx`` file's external data files) are hashed
    with it, each with its location (:func:`fitaudit.models.digest.files_digest`).
    """
    return files_digest(path, with_name=with_name, companions=_companions(Path(path)))


def run_digest(path: str | os.PathLike[str]) -> str:
    """What makes two saved models the same run: :func:`file_digest` (a file's bytes without its name), with
    a folder's JSON files read as JSON, so a space or key order in ``config.json`` does not make a copy new."""
    return run_files_digest(path, companions=_companions(Path(path)))


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
    another: the key adds :func:`run_settings`. A model file whose format
    runs as a torch module (a torch folder, a Hugging Face folder, a
    ``.keras`` or TorchScript file: ``ModelFormat.runs_on``) or a module not yet wrapped runs on the process
    default backend (:func:`fitaudit.models.inference.default_backend`) on
    the CPU. ONNX, scikit-learn and callable models run as they are: their
    key is the weights' fingerprint alone.
    """
    if isinstance(model, (str, os.PathLike)):
        found = find_format(Path(model))
        is_torch = found is not None and found.runs_on == "torch"
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
    if backend is None:
        return ""
    device = getattr(classifier, "device", "cpu")
    precision = getattr(classifier, "precision", "auto")
    reduced = "" if precision == "fp32" or str(device).startswith("cpu") else f"|precision={precision}"
    return _settings_text(backend, device) + reduced


def _settings_text(backend: str, device: Any) -> str:
    return f"|backend={backend}|device={device}"
