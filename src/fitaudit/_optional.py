"""Lazy imports of optional heavy dependencies (torch, onnxruntime, dask)."""

from __future__ import annotations

import importlib
from types import ModuleType

from fitaudit._errors import MissingDependencyError

#: extra that provides each optional top-level module
EXTRA_OF_MODULE = {
    "torch": "torch",
    "safetensors": "torch",
    "onnxruntime": "onnx",
    "onnx": "onnx",
    "dask": "dask",
    "distributed": "dask",
    "h5py": "pgdl",
    "tfrecord": "pgdl",
    "crc32c": "pgdl",
    "optuna": "examine",
    "cmaes": "examine",
    "faiss": "leakage",
    "weightwatcher": "spectrum",
    "pandas": "tables",
    "pyarrow": "tables",
    "xgboost": "xgboost",
    "lightgbm": "lightgbm",
    "transformers": "hf",
    "keras": "keras",
    "cleanlab": "labels",
}


def import_optional(module: str, feature: str = "this feature") -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependencyError` naming the extra.

    Parameters
    ----------
    module : str
        Dotted module name, e.g. ``"torch"`` or ``"safetensors.torch"``.
    feature : str
        What the caller wanted to do, used in the message.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        extra = EXTRA_OF_MODULE.get(top, "all")
        raise MissingDependencyError(
            f"{feature} needs the optional dependency `{top}`; "
            f"install it with `pip install 'fitaudit[{extra}]'`."
        ) from exc
