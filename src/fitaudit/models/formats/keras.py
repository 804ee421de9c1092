"""Keras 3 ``.keras`` files, run by keras's torch backend (the optional ``keras`` extra).

A ``.keras`` file is a zip of ``config.json`` (the layers), ``metadata.json``
and ``model.weights.h5``. Before anything is built, the config is read as
data: every object it names must come from keras itself (``"module":
"keras..."``, no custom ``registered_name``), else the file is refused
unless the caller passes ``trust_code=True`` (``--trust-code``); it is then
loaded with ``keras.saving.load_model(safe_mode=True)`` (no lambda layers),
with ``KERAS_BACKEND=torch``. The input's shape (channels last, as Keras
builds images) comes from the config's ``InputLayer``; the model runs like
any torch module (:mod:`fitaudit.models.inference`), channels-first image
batches transposed to channels last (:mod:`fitaudit.models.layout`). A model
whose last layer is a softmax gives ``log p`` as its scores: the same
softmax, so the same probabilities and predictions.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit.data.archives import check_archive
from fitaudit.models.base import Classifier
from fitaudit.models.formats.base import ModelFormat, ModelMetadata, declare_input, declared_shape

SUFFIX = ".keras"

#: the smallest probability whose log is taken (a softmax output of 0 would give -inf)
_TINY = 1e-38


def read_config(path: str | os.PathLike[str], *, name: str = "--model") -> dict[str, Any]:
    """The ``config.json`` inside a ``.keras`` file, read as data (the archive bounded first, :mod:`fitaudit.data.archives`)."""
    check_archive(path, name=name)
    try:
        with zipfile.ZipFile(path) as archive:
            config = json.loads(archive.read("config.json"))
    except (OSError, KeyError, zipfile.BadZipFile, json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise InputError(f"`{name}`: {os.fspath(path)!r} is not a Keras 3 .keras file ({exc}).") from exc
    if not isinstance(config, dict):
        raise InputError(f"`{name}`: the config.json of {os.fspath(path)!r} must be a JSON object.")
    return config


def _objects(value: Any) -> Iterator[dict[str, Any]]:
    """Every JSON object in ``value``, depth first."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def foreign_objects(config: dict[str, Any]) -> list[str]:
    """The objects a config names from outside keras (modules, custom registered names), sorted."""
    found = set()
    for item in _objects(config):
        module, registered = item.get("module"), item.get("registered_name")
        if isinstance(module, str) and module != "keras" and not module.startswith("keras."):
            found.add(f"{module}.{item.get('class_name')}")
        if isinstance(registered, str) and ">" in registered:
            found.add(registered)
    return sorted(found)


def input_shape(config: dict[str, Any]) -> list[int | None] | None:
    """One example's shape from the config's first ``InputLayer`` (or the model's ``build_config``)."""
    for item in _objects(config):
        if item.get("class_name") == "InputLayer":
            shape = (item.get("config") or {}).get("batch_shape")
            if isinstance(shape, list) and len(shape) > 1:
                return shape[1:]
    built = (config.get("build_config") or {}).get("input_shape")
    return built[1:] if isinstance(built, list) and len(built) > 1 else None


def _keras() -> Any:
    """keras, on the torch backend (set before its first import)."""
    if "keras" not in sys.modules:
        os.environ.setdefault("KERAS_BACKEND", "torch")
    keras = import_optional("keras", "loading a .keras model")
    if keras.backend.backend() != "torch":
        raise InputError(
            f"keras runs on the {keras.backend.backend()!r} backend in this process; fitaudit runs .keras files "
            "on the torch backend: set KERAS_BACKEND=torch before keras is imported."
        )
    return keras


def _ends_in_softmax(model: Any) -> bool:
    last = model.layers[-1] if getattr(model, "layers", None) else None
    activation = getattr(last, "activation", None)
    return type(last).__name__ == "Softmax" or getattr(activation, "__name__", "") == "softmax"


@functools.cache
def _logits_module() -> Any:
    """The torch module class wrapping a keras model (defined once torch is imported)."""
    torch = import_optional("torch", "loading a .keras model")

    class KerasLogits(torch.nn.Module):  # type: ignore[name-defined]
        """A keras model in inference mode; ``log p`` when it ends in a softmax."""

        def __init__(self, inner: Any, probabilities: bool) -> None:
            super().__init__()
            self.inner = inner
            self.probabilities = probabilities

        def forward(self, x: Any) -> Any:
            out = self.inner(x, training=False)
            return torch.log(out.clamp_min(_TINY)) if self.probabilities else out

    return KerasLogits


def n_outputs(module: Any) -> int | None:
    """The width of a loaded model's output (its ``output_shape``), or None when not fixed."""
    shape = getattr(module.inner, "output_shape", None)
    width = shape[-1] if isinstance(shape, tuple) and shape else None
    return width if isinstance(width, int) and width >= 2 else None


def load_module(path: str | os.PathLike[str], *, trust_code: bool = False, name: str = "--model") -> Any:
    """Load a ``.keras`` file safely; returns a torch module giving scores.

    Raises
    ------
    InputError
        Not a ``.keras`` zip; objects from outside keras without
        ``trust_code``; keras on another backend; keras cannot load it.
    """
    foreign = foreign_objects(read_config(path, name=name))
    if foreign and not trust_code:
        raise InputError(
            f"`{name}`: {os.fspath(path)!r} names objects from outside keras ({', '.join(foreign[:5])}); building them "
            "runs their code: only with --trust-code (trust_code=True), for a model you trust, with their package "
            "importable."
        )
    keras = _keras()
    try:
        model = keras.saving.load_model(os.fspath(path), compile=False, safe_mode=not trust_code)
    except Exception as exc:  # keras raises ValueError, TypeError, OSError for files it cannot build
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"`{name}`: keras could not load {os.fspath(path)!r} ({first}).") from exc
    return _logits_module()(model, _ends_in_softmax(model)).eval()


class KerasFile(ModelFormat):
    """A Keras 3 ``.keras`` file (module docstring), run as a torch module on keras's torch backend."""

    name = "keras"
    kind = "keras"
    runs_on = "torch"
    suffixes = (SUFFIX,)

    def load(
        self, path: Path, *, n_classes: int | None, batch_size: int | None, device: Any, trust_code: bool,
        trust_torchscript: bool, name: str,
    ) -> Classifier:
        from fitaudit.models.native import wrap_native

        shape = input_shape(read_config(path, name=name))
        module = load_module(path, trust_code=trust_code, name=name)
        if n_classes is None:
            n_classes = n_outputs(module)
        adapter = wrap_native(module, n_classes=n_classes, batch_size=batch_size, device=device)
        adapter.format_name = "Keras"
        return adapter if shape is None else declare_input(adapter, shape)

    def runs_code(self, path: Path) -> bool:
        """Whether the config names objects from outside keras (:func:`foreign_objects`)."""
        return path.is_file() and bool(foreign_objects(read_config(path)))

    def metadata(self, path: Path, *, name: str) -> ModelMetadata:
        """The input's shape, from the config's ``InputLayer``; a ``.keras`` file records no classes or pipeline."""
        return ModelMetadata(input_shape=declared_shape(input_shape(read_config(path, name=name))))
