"""``fitaudit inspect``: load a model safely, describe it, score it on data.

Example: ``fitaudit inspect --model net/ --data test.npz --json``.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

import numpy as np

from fitaudit.cli._common import data_file
from fitaudit.data.io import read_npz, validate_dataset
from fitaudit.models import SklearnClassifier, load_model
from fitaudit.results import Result

#: how each adapter kind is named in the summary
KIND_NAMES = {"torch": "a torch model", "onnx": "an ONNX model", "sklearn": "a scikit-learn model"}


@dataclasses.dataclass(repr=False)
class InspectResult(Result):
    """What ``fitaudit inspect`` found.

    Attributes
    ----------
    model : str
        The path given.
    kind : str
        Adapter kind: ``"torch"``, ``"onnx"`` or ``"sklearn"``.
    n_classes : int
    classes : list or None
        Original labels of a scikit-learn model (column ``j`` is ``classes[j]``).
    input_shape : list or None
        Shape of one example, when the model file says (``None`` = any size).
    n_examples : int or None
        Size of the dataset, when one was given.
    accuracy : float or None
        Fraction of correctly classified examples of the dataset.
    """

    model: str
    kind: str
    n_classes: int
    classes: list[Any] | None = None
    input_shape: list[int | None] | None = None
    n_examples: int | None = None
    accuracy: float | None = None


def run_inspect(args: argparse.Namespace) -> InspectResult:
    """Handler of ``fitaudit inspect``."""
    adapter = load_model(
        args.model,
        trust_torchscript=args.trust_torchscript,
        batch_size=args.batch_size,
        device=args.device,
        name="--model",
    )
    classes = None
    if isinstance(adapter, SklearnClassifier):
        classes = adapter.classes.tolist()
    result = InspectResult(
        model=str(args.model),
        kind=adapter.kind,
        n_classes=adapter.n_classes,
        classes=classes,
        input_shape=None if adapter.input_shape is None else list(adapter.input_shape),
    )
    if args.data is None:
        return result
    x, y = read_npz(data_file(args.data), name="--data")
    if isinstance(adapter, SklearnClassifier) and not adapter.labels_are_indices:
        y = adapter.encode_labels(y, name="--data['y']")
    x, y = validate_dataset(
        x, y, n_classes=adapter.n_classes, image=args.image, name_x="--data['x']", name_y="--data['y']"
    )
    result.n_examples = int(len(y))
    result.accuracy = float(np.mean(adapter.predict(x) == y))
    return result


def summary(result: InspectResult) -> str:
    """What was loaded and, with data, how accurate it is."""
    kind = KIND_NAMES.get(result.kind, f"a {result.kind} model")
    classes = "" if result.classes is None else f" ({', '.join(map(str, result.classes))})"
    shape = "any input size" if result.input_shape is None else "inputs of shape " + " x ".join(
        "any" if d is None else str(d) for d in result.input_shape
    )
    lines = [f"{result.model} loaded safely: {kind} with {result.n_classes} classes{classes}, {shape}."]
    if result.accuracy is not None:
        lines.append(f"Accuracy on the {result.n_examples} examples of the data: {result.accuracy:.4f}.")
    return "\n".join(lines)


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``fitaudit inspect`` to the command line."""
    parser = subparsers.add_parser(
        "inspect",
        parents=parents,
        help="load a model safely, show its classes and its accuracy on data",
        description=(
            "Load a model (ONNX, torch safetensors + config.json folder, scikit-learn .skops) "
            "without unpickling anything, print its kind and number of classes and, with "
            "--data, validate the dataset and print the model's accuracy on it."
        ),
    )
    parser.add_argument(
        "--model", required=True, help="model file (.onnx, .skops) or folder (weights.safetensors + config.json)"
    )
    parser.add_argument(
        "--data", help=".npz file with arrays x (inputs) and y (labels); prints the accuracy on it"
    )
    parser.add_argument("--image", action="store_true", help="x holds images (m, C, H, W) in [0, 1]")
    parser.add_argument("--batch-size", type=int, default=256, help="examples per model call")
    parser.add_argument("--device", default="cpu", help="torch device, e.g. cpu or cuda:0")
    parser.add_argument(
        "--trust-torchscript",
        action="store_true",
        help="allow loading a TorchScript file (runs code stored in it; only for trusted files)",
    )
    parser.set_defaults(handler=run_inspect, summary=summary)
