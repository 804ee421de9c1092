"""One fingerprint of a model, to key checkpoints of work done on it.

:func:`model_fingerprint` follows a model's weights, not its identity: a
model file or folder (ONNX, safetensors + config, skops, a PGDL model
folder) by the bytes of its files, an in-memory model by its parameters or
state (:func:`fitaudit.checkpoint.fingerprint`). Two copies of the same
weights share a fingerprint; a changed weight changes it. An ONNX file whose
tensors live in external data files (``weights.bin`` beside it, as models
over 2 GB must) is hashed with those files (:func:`onnx_external_files`).
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fitaudit._errors import InputError
from fitaudit.checkpoint import fingerprint
from fitaudit.models.base import is_classifier_adapter

_BLOCK = 1 << 20


def _onnx_tensors(graph: Any) -> Iterator[Any]:
    """Every tensor of an ONNX graph: initializers, sparse ones, node attributes, subgraphs (If, Loop, Scan)."""
    yield from graph.initializer
    for sparse in graph.sparse_initializer:
        yield sparse.values
        yield sparse.indices
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField("t"):
                yield attribute.t
            yield from attribute.tensors
            if attribute.HasField("g"):
                yield from _onnx_tensors(attribute.g)
            for subgraph in attribute.graphs:
                yield from _onnx_tensors(subgraph)


def onnx_external_files(path: str | os.PathLike[str], *, name: str = "--model") -> list[Path]:
    """The external data files an ONNX file's tensors name (their ``location``), sorted, without repeats.

    Locations are relative to the file's folder and must stay inside it
    (as onnxruntime requires); a named file that does not exist is refused.
    A file without the word ``location`` in its bytes has no external data
    and is not parsed.
    """
    target = Path(path)
    with open(target, "rb") as handle:
        if os.fstat(handle.fileno()).st_size == 0:
            return []
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
            if view.find(b"location") < 0:
                return []
    from fitaudit._optional import import_optional

    onnx = import_optional("onnx", "reading an ONNX model's external data files")
    try:
        proto = onnx.load_model(str(target), load_external_data=False)
    except Exception as exc:  # onnx raises DecodeError and others for corrupt files
        raise InputError(f"`{name}`: {str(target)!r} could not be read as an ONNX model ({exc}).") from exc
    folder = target.parent.resolve()
    found: set[Path] = set()
    for tensor in _onnx_tensors(proto.graph):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        location = next((e.value for e in tensor.external_data if e.key == "location"), "")
        file = (target.parent / location).resolve()
        if not location or Path(location).is_absolute() or not file.is_relative_to(folder):
            raise InputError(f"`{name}`: {str(target)!r} names the external data file {location!r}, which is not "
                             "inside the model's folder.")
        if not file.is_file():
            raise InputError(f"`{name}`: the external data file {location!r} that {str(target)!r} names does not exist.")
        found.add(file)
    return sorted(found)


def _hash_file(digest: Any, file: Path) -> None:
    with open(file, "rb") as handle:
        for block in iter(lambda: handle.read(_BLOCK), b""):
            digest.update(block)


#: the files of a model folder that a format reads (torch and Hugging Face configs and weights, an architecture
#: file run with --trust-code); other files beside them (a data set, an old checkpoint) are not the model's
MODEL_FOLDER_SUFFIXES = (".json", ".safetensors", ".py")


def model_folder_files(root: Path) -> list[Path]:
    """The files of a model folder that make the model (:data:`MODEL_FOLDER_SUFFIXES`), in sorted order."""
    return sorted(p for p in root.rglob("*") if p.suffix.lower() in MODEL_FOLDER_SUFFIXES and p.is_file())


def file_digest(path: str | os.PathLike[str], *, with_name: bool = True) -> str:
    """SHA-256 of a file's name and bytes, or of a model folder's files (relative names and bytes, in sorted
    order; only the files a format reads, :func:`model_folder_files`).

    ``with_name=False``: a single file's bytes alone, so a copy under another name has the same digest.
    An ``.onnx`` file's external data files (:func:`onnx_external_files`) are hashed with it, each
    with its location.
    """
    root = Path(path)
    files = model_folder_files(root) if root.is_dir() else [root]
    digest = hashlib.sha256()
    for file in files:
        if root.is_dir() or with_name:
            digest.update(str(file.relative_to(root) if root.is_dir() else file.name).encode())
        _hash_file(digest, file)
    if root.is_file() and root.suffix.lower() == ".onnx":
        for external in onnx_external_files(root):
            digest.update(b"\0external:" + external.relative_to(root.parent.resolve()).as_posix().encode() + b"\0")
            _hash_file(digest, external)
    return digest.hexdigest()


def run_digest(path: str | os.PathLike[str]) -> str:
    """What makes two saved models the same run: :func:`file_digest` (a file's bytes without its name), with
    a folder's JSON files read as JSON, so a space or key order in ``config.json`` does not make a copy new."""
    root = Path(path)
    if not root.is_dir():
        return "bytes:" + file_digest(root, with_name=False)
    digest = hashlib.sha256(b"run:")
    for file in model_folder_files(root):
        digest.update(file.relative_to(root).as_posix().encode() + b"\0")
        if file.suffix.lower() == ".json":
            try:
                digest.update(json.dumps(json.loads(file.read_text()), sort_keys=True).encode())
                continue
            except (ValueError, UnicodeDecodeError, RecursionError):
                pass  # not JSON after all: its bytes
        _hash_file(digest, file)
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
    if backend is None:
        return ""
    device = getattr(classifier, "device", "cpu")
    precision = getattr(classifier, "precision", "auto")
    reduced = "" if precision == "fp32" or str(device).startswith("cpu") else f"|precision={precision}"
    return _settings_text(backend, device) + reduced


def _settings_text(backend: str, device: Any) -> str:
    return f"|backend={backend}|device={device}"
