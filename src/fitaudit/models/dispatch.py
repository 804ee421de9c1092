"""``as_classifier``: wrap any supported model in the common adapter."""

from __future__ import annotations

import os
import sys
from typing import Any

from fitaudit._errors import InputError
from fitaudit.models.base import Classifier
from fitaudit.models.callable_adapter import CallableClassifier
from fitaudit.models.sklearn_adapter import SklearnClassifier, is_sklearn_classifier


def _is_instance_of(obj: Any, module: str, attribute: str) -> bool:
    """``isinstance(obj, module.attribute)`` without importing ``module``."""
    loaded = sys.modules.get(module)
    cls = getattr(loaded, attribute, None) if loaded is not None else None
    return isinstance(cls, type) and isinstance(obj, cls)


def is_classifier_adapter(obj: Any) -> bool:
    """Whether ``obj`` already is a :class:`~fitaudit.models.Classifier`."""
    return isinstance(obj, Classifier)


def as_classifier(
    obj: Any, *, n_classes: int | None = None, batch_size: int = 256, device: Any = "cpu"
) -> Classifier:
    """Wrap ``obj`` in the adapter that fits it.

    Parameters
    ----------
    obj : model
        A :class:`Classifier` (returned unchanged), a torch ``nn.Module``,
        an ``onnxruntime.InferenceSession``, ONNX bytes, a path to a model
        file (loaded safely with :func:`fitaudit.models.load_model`), a
        fitted scikit-learn classifier, or a callable ``f(x) -> scores``.
    n_classes : int, optional
        Number of classes; inferred when the model tells.
    batch_size : int
        Examples per call of the native model.
    device : str
        Torch device (``"cpu"``, ``"cuda"``, ``"cuda:0"``); for ONNX,
        ``"cuda"`` selects the CUDA execution provider.

    Returns
    -------
    Classifier
    """
    if is_classifier_adapter(obj):
        if n_classes is not None and obj.n_classes != n_classes:
            raise InputError(f"`n_classes` is {n_classes} but the given adapter has {obj.n_classes} classes.")
        return obj
    if _is_instance_of(obj, "torch.nn", "Module"):
        from fitaudit.models.torch_adapter import TorchClassifier

        return TorchClassifier(obj, n_classes=n_classes, batch_size=batch_size, device=device)
    if isinstance(obj, bytes) or _is_instance_of(obj, "onnxruntime", "InferenceSession"):
        from fitaudit.models.onnx_adapter import OnnxClassifier

        return OnnxClassifier(obj, n_classes=n_classes, batch_size=batch_size, device=str(device))
    if isinstance(obj, (str, os.PathLike)):
        from fitaudit.models.io import load_model

        return load_model(obj, n_classes=n_classes, batch_size=batch_size, device=device)
    if is_sklearn_classifier(obj):
        return SklearnClassifier(obj, n_classes=n_classes, batch_size=batch_size)
    if callable(obj):
        return CallableClassifier(obj, n_classes=n_classes, batch_size=batch_size)
    raise InputError(
        "`model` must be a torch nn.Module, an ONNX model (path, bytes or InferenceSession), "
        "a fitted scikit-learn classifier, a callable returning scores, or a path to a saved "
        f"model; got {type(obj).__name__}."
    )
