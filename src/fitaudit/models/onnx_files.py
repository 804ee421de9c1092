"""The files an ONNX model is made of: its graph file and the external data files its tensors name.

A model over 2 GB keeps its tensors outside the graph, in files beside it
(``weights.bin``) that each tensor names by its ``location``. They are part
of the model: :func:`onnx_digest` hashes them with the graph, so a changed
weight changes the fingerprint (:mod:`fitaudit.models.fingerprint`), and a
population copies them with it (:mod:`fitaudit.pgdl.population`).
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit.models.digest import files_digest


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


def onnx_digest(path: str | os.PathLike[str], *, with_name: bool = True) -> str:
    """:func:`fitaudit.models.digest.files_digest` of an ONNX file with its external data files."""
    return files_digest(path, with_name=with_name, companions=onnx_external_files(path))
