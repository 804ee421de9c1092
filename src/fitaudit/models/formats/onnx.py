"""ONNX files (``.onnx``), run by onnxruntime (:class:`fitaudit.models.onnx_adapter.OnnxClassifier`).

An ONNX file is data: a graph of standard operators and its tensors, which
onnxruntime runs; nothing in it runs as Python. What it records about its
data are metadata properties, JSON text under the keys of
:data:`~fitaudit.models.formats.base.METADATA_KEYS` (:func:`export_onnx`
writes them), and the declared shape of its one input. Tensors kept in
external data files (:mod:`fitaudit.models.onnx_files`) are part of the
model and of its fingerprint.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit.checkpoint import atomic_path
from fitaudit.models.base import Classifier
from fitaudit.models.formats.base import ModelFormat, ModelMetadata, recorded_metadata
from fitaudit.models.onnx_files import onnx_external_files


def _onnx_properties(path: Path, name: str) -> dict[str, Any]:
    """The ONNX file's metadata properties, each value parsed as JSON where it is JSON, and ``"input_shape"``.

    ``"input_shape"`` is the declared shape of one example of the graph's
    input (symbolic sizes as None), unless a property of that name exists; a
    graph with several inputs (one per table column) declares none.
    """
    onnx = import_optional("onnx", "reading an ONNX model's metadata")
    try:
        proto = onnx.load_model(str(path), load_external_data=False)
    except Exception as exc:  # onnx raises DecodeError and others for corrupt files
        raise InputError(f"`{name}`: {str(path)!r} could not be read as an ONNX model ({exc}).") from exc
    values: dict[str, Any] = {}
    for entry in proto.metadata_props:
        try:
            values[entry.key] = json.loads(entry.value)
        except (json.JSONDecodeError, RecursionError):
            values[entry.key] = entry.value
    weights = {init.name for init in proto.graph.initializer}
    inputs = [i for i in proto.graph.input if i.name not in weights]
    if len(inputs) == 1 and inputs[0].type.HasField("tensor_type") and inputs[0].type.tensor_type.HasField("shape"):
        dims = [d.dim_value if d.HasField("dim_value") else None for d in inputs[0].type.tensor_type.shape.dim]
        values.setdefault("input_shape", dims[1:])
    return values


class OnnxFile(ModelFormat):
    """An ``.onnx`` file, run by onnxruntime (``device="cuda"``: its CUDA execution provider)."""

    name = "onnx"
    kind = "onnx"
    runs_on = "onnxruntime"
    suffixes = (".onnx",)

    def load(
        self, path: Path, *, n_classes: int | None, batch_size: int | None, device: Any, trust_code: bool,
        trust_torchscript: bool, name: str,
    ) -> Classifier:
        from fitaudit.models.native import DEFAULT_BATCH_SIZE
        from fitaudit.models.onnx_adapter import OnnxClassifier, open_session

        return OnnxClassifier(open_session(path, device=str(device), name=name), n_classes=n_classes,
                              batch_size=DEFAULT_BATCH_SIZE if batch_size is None else batch_size, device=device)

    def metadata(self, path: Path, *, name: str) -> ModelMetadata:
        return recorded_metadata(_onnx_properties(path, name), f"the metadata of {str(path)!r}", name)

    def companion_files(self, path: Path) -> list[Path]:
        return onnx_external_files(path)


def export_onnx(
    module: Any,
    path: str | os.PathLike[str],
    *,
    input_shape: tuple[int, ...],
    metadata: dict[str, Any] | None = None,
) -> Path:
    """Export a torch module to ONNX (batch dimension dynamic) with metadata properties.

    Uses torch's dynamo exporter (needs ``onnxscript``, in the ``onnx``
    extra) and falls back to the TorchScript exporter where that fails.

    Parameters
    ----------
    module : torch.nn.Module
        Put in eval mode before export.
    path : path
        The ``.onnx`` file, written atomically.
    input_shape : tuple of int
        Shape of one example, e.g. ``(3, 224, 224)``.
    metadata : dict, optional
        JSON values stored as metadata properties, e.g. ``classes``,
        ``pipeline``, ``data_fingerprint`` (:func:`fitaudit.models.io.read_model_metadata`).
    """
    torch = import_optional("torch", "exporting to ONNX")
    onnx = import_optional("onnx", "exporting to ONNX")
    module = module.eval()
    weights = next(iter(module.parameters()), None)  # the example where the weights are (a GPU-trained network)
    example = (torch.zeros((2, *input_shape), device=None if weights is None else weights.device),)
    target = Path(path)
    with atomic_path(target) as tmp:
        try:
            torch.onnx.export(
                module, example, str(tmp), dynamo=True, input_names=["x"], output_names=["logits"],
                dynamic_shapes=({0: torch.export.Dim("batch")},), external_data=False, verbose=False,
            )
        except Exception:  # the dynamo exporter cannot trace this module: the TorchScript exporter
            torch.onnx.export(
                module, example, str(tmp), dynamo=False, input_names=["x"], output_names=["logits"],
                dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}},
            )
        proto = onnx.load_model(str(tmp))
        for key, value in (metadata or {}).items():
            entry = proto.metadata_props.add()
            entry.key, entry.value = str(key), json.dumps(value)
        onnx.save_model(proto, str(tmp))
    return target
