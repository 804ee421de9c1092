"""Keras 2 HDF5 weight files (``model.save_weights('x.hdf5')``), read and written with h5py.

Layout (``keras/saving/hdf5_format.py`` of Keras 2.x, ``save_weights_to_hdf5_group``):

* root attributes ``layer_names`` (every layer of the model in order, those
  without weights included), ``backend`` and ``keras_version``;
* one group per layer, with attribute ``weight_names`` (e.g.
  ``[b"conv2d/kernel:0", b"conv2d/bias:0"]``; empty for a layer without
  weights) and one dataset per weight at ``<layer>/<weight name>``, i.e.
  ``conv2d/conv2d/kernel:0``.

A file saved with ``model.save`` holds the same tree under ``model_weights``;
it is read too. Keras 2 loads such a file by *order*: the i-th layer with
weights in the file goes to the i-th layer with weights in the model, which
is what :func:`read_weights` returns.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit.checkpoint import atomic_path

LayerWeights = tuple[str, list[tuple[str, np.ndarray]]]


def _h5py() -> Any:
    return import_optional("h5py", "reading or writing Keras HDF5 weights")


def _text(value: Any) -> str:
    return value.decode("utf8") if isinstance(value, bytes) else str(value)


def read_weights(path: str | os.PathLike[str]) -> list[LayerWeights]:
    """The layers that have weights, in file order, with their (name, array) pairs.

    Parameters
    ----------
    path : path
        A Keras 2 ``save_weights`` (or ``save``) HDF5 file.

    Returns
    -------
    list of (layer name, [(weight name, ndarray), ...])
        Weight names as stored (``"conv2d/kernel:0"``); layers without
        weights are left out.
    """
    h5py = _h5py()
    target = Path(path)
    if not target.is_file():
        raise InputError(f"weights file {str(target)!r} does not exist.")
    try:
        handle = h5py.File(target, "r")
    except OSError as exc:
        raise InputError(f"{str(target)!r} is not a readable HDF5 file ({exc}).") from exc
    with handle:
        group = handle["model_weights"] if "model_weights" in handle else handle
        if "layer_names" not in group.attrs:
            raise InputError(
                f"{str(target)!r} is not a Keras 2 weights file: the root attribute 'layer_names' is missing."
            )
        layers: list[LayerWeights] = []
        try:
            for layer_name in (_text(n) for n in group.attrs["layer_names"]):
                if layer_name not in group:
                    raise InputError(f"{str(target)!r}: layer {layer_name!r} is listed in 'layer_names' but has no group.")
                layer_group = group[layer_name]
                names = [_text(n) for n in layer_group.attrs.get("weight_names", [])]
                weights = []
                for name in names:
                    if name not in layer_group:
                        raise InputError(f"{str(target)!r}: weight {layer_name}/{name} is listed but missing.")
                    weights.append((name, np.asarray(layer_group[name][()])))
                if weights:
                    layers.append((layer_name, weights))
        except (OSError, KeyError, TypeError) as exc:  # h5py's errors on damaged objects
            raise InputError(f"{str(target)!r}: could not read the weights ({exc}).") from exc
    return layers


def write_weights(
    path: str | os.PathLike[str], layers: list[LayerWeights], *, keras_version: str = "2.4.0"
) -> Path:
    """Write ``layers`` in the Keras 2 ``save_weights`` layout (atomically).

    Parameters
    ----------
    path : path
    layers : list of (layer name, [(weight name, ndarray), ...])
        Every layer of the model in order (an empty list for a layer
        without weights); weight names as Keras 2 writes them
        (``"conv2d/kernel:0"``).
    """
    h5py = _h5py()
    with atomic_path(path) as tmp, h5py.File(tmp, "w") as handle:
        handle.attrs["layer_names"] = np.array([n.encode("utf8") for n, _ in layers], dtype="S")
        handle.attrs["backend"] = b"tensorflow"
        handle.attrs["keras_version"] = keras_version.encode("utf8")
        for layer_name, weights in layers:
            group = handle.create_group(layer_name)
            group.attrs["weight_names"] = np.array([n.encode("utf8") for n, _ in weights], dtype="S")
            for name, array in weights:
                dataset = group.create_dataset(name, np.shape(array), dtype=np.asarray(array).dtype)
                dataset[()] = np.asarray(array)
    return Path(path)
