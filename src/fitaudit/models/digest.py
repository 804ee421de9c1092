"""SHA-256 digests of the bytes a saved model is made of: one way of hashing files and folders.

:func:`files_digest` hashes a model file (its name and bytes) or a model
folder (the relative names and bytes of the files a format reads,
:func:`model_folder_files`), then the companion files its format names
(:meth:`fitaudit.models.formats.base.ModelFormat.companion_files`: an ONNX
file's external data), each with its location. Which companions a path
has is the format's to say; :mod:`fitaudit.models.fingerprint` asks it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

_BLOCK = 1 << 20

#: the files of a model folder that a format reads (torch and Hugging Face configs and weights, an architecture
#: file run with --trust-code); other files beside them (a data set, an old checkpoint) are not the model's
MODEL_FOLDER_SUFFIXES = (".json", ".safetensors", ".py")


def hash_file(digest: Any, file: Path) -> None:
    """Feed ``file``'s bytes to ``digest``, a block at a time."""
    with open(file, "rb") as handle:
        for block in iter(lambda: handle.read(_BLOCK), b""):
            digest.update(block)


def model_folder_files(root: Path) -> list[Path]:
    """The files of a model folder that make the model (:data:`MODEL_FOLDER_SUFFIXES`), in sorted order."""
    return sorted(p for p in root.rglob("*") if p.suffix.lower() in MODEL_FOLDER_SUFFIXES and p.is_file())


def _hash_companions(digest: Any, root: Path, companions: Sequence[Path]) -> None:
    for companion in companions:
        digest.update(b"\0external:" + companion.relative_to(root.parent.resolve()).as_posix().encode() + b"\0")
        hash_file(digest, companion)


def files_digest(path: str | os.PathLike[str], *, with_name: bool = True, companions: Sequence[Path] = ()) -> str:
    """SHA-256 of a file's name and bytes, or of a model folder's files (relative names and bytes, in sorted
    order; only the files a format reads, :func:`model_folder_files`).

    ``with_name=False``: a single file's bytes alone, so a copy under another name has the same digest.
    ``companions`` (resolved paths in the file's folder) are hashed after it, each with its location.
    """
    root = Path(path)
    files = model_folder_files(root) if root.is_dir() else [root]
    digest = hashlib.sha256()
    for file in files:
        if root.is_dir() or with_name:
            digest.update(str(file.relative_to(root) if root.is_dir() else file.name).encode())
        hash_file(digest, file)
    if root.is_file():
        _hash_companions(digest, root, companions)
    return digest.hexdigest()


def run_files_digest(path: str | os.PathLike[str], *, companions: Sequence[Path] = ()) -> str:
    """What makes two saved models the same run: :func:`files_digest` (a file's bytes without its name), with
    a folder's JSON files read as JSON, so a space or key order in ``config.json`` does not make a copy new."""
    root = Path(path)
    if not root.is_dir():
        return "bytes:" + files_digest(root, with_name=False, companions=companions)
    digest = hashlib.sha256(b"run:")
    for file in model_folder_files(root):
        digest.update(file.relative_to(root).as_posix().encode() + b"\0")
        if file.suffix.lower() == ".json":
            try:
                digest.update(json.dumps(json.loads(file.read_text()), sort_keys=True).encode())
                continue
            except (ValueError, UnicodeDecodeError, RecursionError):
                pass  # not JSON after all: its bytes
        hash_file(digest, file)
    return digest.hexdigest()
