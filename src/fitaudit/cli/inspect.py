"""``fitaudit inspect``: load a model safely, describe it, score it on data.

Example: ``fitaudit inspect --model net/ --data test.npz --json``.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from fitaudit.cli._common import data_file

if TYPE_CHECKING:
    from fitaudit.models.inspection import InspectResult

#: how each adapter kind is named in the summary
KIND_NAMES = {"torch": "a torch model", "onnx": "an ONNX model", "sklearn": "a scikit-learn model"}


def run_inspect(args: argparse.Namespace) -> InspectResult:
    """Handler of ``fitaudit inspect``."""
    from fitaudit.models.inspection import inspect_model  # lazy: it loads scipy.stats

    return inspect_model(
        args.model,
        None if args.data is None else data_file(args.data),
        image=args.image,
        trust_torchscript=args.trust_torchscript,
        batch_size=args.batch_size,
        device=args.device,
        model_name="--model",
        data_name="--data",
    )


def summary(result: InspectResult) -> str:
    """What was loaded and, with data, how accurate it is."""
    kind = KIND_NAMES.get(result.kind, f"a {result.kind} model")
    classes = "" if result.classes is None else f" ({', '.join(map(str, result.classes))})"
    shape = "any input size" if result.input_shape is None else "inputs of shape " + " x ".join(
        "any" if d is None else str(d) for d in result.input_shape
    )
    lines = [f"{result.model} loaded safely: {kind} with {result.n_classes} classes{classes}, {shape}."]
    if result.accuracy is not None:
        scored = (
            f"the centre crops of the {result.n_examples} canvases of the data (a {result.margin}-pixel margin per side)"
            if result.margin
            else f"the {result.n_examples} examples of the data"
        )
        interval = ""
        if result.accuracy_interval is not None:
            low, high = result.accuracy_interval
            interval = f" (95% interval {low:.4f}-{high:.4f}, exact)"
        lines.append(f"Accuracy on {scored}: {result.accuracy:.4f}{interval}.")
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
            "--data, validate the dataset and print the model's accuracy on it (on the centre "
            "crops of canvases saved with a margin, as `fitaudit shapes dataset --free-position` writes)."
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
