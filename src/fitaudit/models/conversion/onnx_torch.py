"""An ONNX file as a torch module, for the code that walks torch networks (the generalization measures).

:func:`onnx_module` wraps an ONNX file in a ``torch.nn.Module`` whose
forward pass runs onnxruntime: measures that need only a network's outputs
run on it as on any torch network, and weight measures read its
:func:`onnx_weight_tensors` (the graph's Conv, Gemm and MatMul weights, in
torch's layout). A population of a user's ONNX files
(:mod:`fitaudit.pgdl.population`) opens its models this way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from fitaudit._optional import import_optional
from fitaudit.models.onnx_files import onnx_digest


def onnx_weight_tensors(path: Path) -> list[tuple[str, str, np.ndarray]]:
    """``(name, kind, weight)`` of every Conv (4-D kernel), Gemm and MatMul weight initializer, in graph order.

    Weights in torch's layout: Conv (out, in, kh, kw); Gemm/MatMul as stored
    (a transpose does not change a spectrum).
    """
    onnx = import_optional("onnx", "reading an ONNX model's weights")
    numpy_helper = import_optional("onnx.numpy_helper", "reading an ONNX model's weights")
    graph = onnx.load(str(path)).graph
    inits = {t.name: t for t in graph.initializer}
    # a weight transposed by its own node (MatMul after Transpose) is that initializer
    transposed = {n.output[0]: n.input[0] for n in graph.node if n.op_type == "Transpose" and n.input[0] in inits}
    found = []
    for node in graph.node:
        if node.op_type not in ("Conv", "Gemm", "MatMul") or len(node.input) < 2:
            continue
        source = transposed.get(node.input[1], node.input[1])
        if source not in inits:
            continue
        weight = numpy_helper.to_array(inits[source]).astype(np.float64)
        if node.op_type == "Conv" and weight.ndim == 4:
            found.append((source, "conv2d", weight))
        elif node.op_type != "Conv" and weight.ndim == 2:
            found.append((source, "dense", weight))
    return found


def onnx_module(path: Path) -> Any:
    """A torch module running the ONNX file through onnxruntime (outputs only: no parameters, no gradients).

    Measures that need only outputs run on it as on any network; weight
    measures read :meth:`weight_tensors` (the graph's initializers). It says
    ``model_format = "onnx"``, which :class:`~fitaudit.measures.base.Measure`
    checks against each measure's ``formats``. It opens on the CPU; moved as
    a torch module is (``.to(device)``, the scoring harness's
    :func:`~fitaudit.models.torch_adapter.move_model`), its session is
    opened again with that device's providers
    (:func:`fitaudit.models.onnx_adapter.providers`: ``cuda`` runs in CUDA).
    """
    torch = import_optional("torch", "running an ONNX model inside the measures")
    ort = import_optional("onnxruntime", "running an ONNX model inside the measures")
    from fitaudit.models.onnx_adapter import OnnxClassifier, open_session

    def session(device: str) -> Any:
        options = ort.SessionOptions()  # one thread, as the measures' torch: thread pools cost more than these models
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        return OnnxClassifier(open_session(str(path), device=device, options=options, name=str(path)), device=device)

    class OnnxModule(torch.nn.Module):  # type: ignore[name-defined]
        model_format = "onnx"

        def __init__(self) -> None:
            super().__init__()
            self.classifier = session("cpu")

        def forward(self, x: Any) -> Any:
            classifier = self.classifier
            array = np.ascontiguousarray(x.detach().cpu().numpy(), dtype=classifier.input_dtype)
            return torch.from_numpy(np.asarray(classifier.model.run(None, {classifier.input_name: array})[0]))

        def to(self, *args: Any, **kwargs: Any) -> Any:
            """Run on the device named as :meth:`torch.nn.Module.to` takes it (a dtype alone changes nothing)."""
            device = torch._C._nn._parse_to(*args, **kwargs)[0]
            if device is not None and str(device) != self.classifier.device:
                self.classifier = session(str(device))
            return self

        def weight_tensors(self) -> list[tuple[str, str, np.ndarray]]:
            return onnx_weight_tensors(path)

        def fingerprint(self) -> str:
            return onnx_digest(path, with_name=False)  # its external data files too

        def __deepcopy__(self, memo: dict[int, Any]) -> Any:
            return self  # stateless: the session is only read

    return OnnxModule().eval()
