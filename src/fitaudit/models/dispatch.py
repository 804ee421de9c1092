"""``as_classifier``: wrap any supported model in the common adapter."""

from __future__ import annotations

import os
import sys
from typing import Any

from fitaudit._errors import InputError
from fitaudit.models.base import Classifier, ClassifierProtocol, implements_protocol
from fitaudit.models.callable_adapter import CallableClassifier
from fitaudit.models.sklearn_adapter import SklearnClassifier, is_sklearn_classifier


def _is_instance_of(obj: Any, module: str, attribute: str) -> bool:
    """``isinstance(obj, module.attribute)`` without importing ``module``."""
    loaded = sys.modules.get(module)
    cls = getattr(loaded, attribute, None) if loaded is not None else None
    return isinstance(cls, type) and isinstance(obj, cls)


def is_classifier_adapter(obj: Any) -> bool:
    """Whether ``obj`` already is a classifier: an adapter or any :class:`ClassifierProtocol` object."""
    return isinstance(obj, Classifier) or implements_protocol(obj)


def as_classifier(
    obj: Any, *, n_classes: int | None = None, batch_size: int = 256, device: Any = "cpu"
) -> ClassifierProtocol:
    """Wrap ``obj`` in the adapter that fits it.

    Parameters
    ----------
    obj : model
        A classifier (a :class:`Classifier` adapter or any object with
        ``n_classes``, ``logits``, ``predict_proba`` and ``predict``, see
        :class:`~fitaudit.models.base.ClassifierProtocol`: returned
        unchanged), an object with only ``n_classes`` and ``logits`` (its
        ``logits`` wrapped as a callable), a torch ``nn.Module``,
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
    ClassifierProtocol
    """
    if is_classifier_adapter(obj):
        if n_classes is not None and obj.n_classes != n_classes:
            raise InputError(f"`n_classes` is {n_classes} but the given adapter has {obj.n_classes} classes.")
        return obj
    if callable(getattr(obj, "logits", None)) and isinstance(getattr(obj, "n_classes", None), int):
        if n_classes is not None and obj.n_classes != n_classes:
            raise InputError(f"`n_classes` is {n_classes} but the given model has {obj.n_classes} classes.")
        return CallableClassifier(obj.logits, n_classes=obj.n_classes, batch_size=batch_size)
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
        "`model` must be a classifier (with n_classes, logits, predict_proba and predict), a torch "
        "nn.Module, an ONNX model (path, bytes or InferenceSession), a fitted scikit-learn "
        f"classifier, a callable returning scores, or a path to a saved model; got {type(obj).__name__}."
    )
