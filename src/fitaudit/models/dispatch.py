"""``as_classifier``: wrap any supported model in the common adapter."""

from __future__ import annotations

import os
from typing import Any

from fitaudit._errors import InputError
from fitaudit.models.base import ClassifierProtocol, is_classifier_adapter
from fitaudit.models.callable_adapter import CallableClassifier
from fitaudit.models.inference.settings import check_backend, using_backend
from fitaudit.models.native import DEFAULT_BATCH_SIZE, is_instance_of, is_torch_module, wrap_native
from fitaudit.models.sklearn_adapter import is_sklearn_classifier


def _kind_name(obj: Any) -> str:
    """What kind of model ``obj`` is, for messages."""
    if is_classifier_adapter(obj):
        return str(getattr(obj, "kind", "classifier"))
    return "scikit-learn" if is_sklearn_classifier(obj) else "callable"


def _check_backend_applies(backend: str | None, kind: str) -> None:
    """A backend named for a model that is not a torch module: ``"onnx"`` fits an ONNX model, nothing else does."""
    if backend is None or backend == "auto" or (backend == "onnx" and kind == "onnx"):
        return
    check_backend(backend)
    raise InputError(
        f"`backend` is {backend!r} but the model is {'an ONNX' if kind == 'onnx' else 'a ' + kind} model; "
        "backends apply to torch modules (an ONNX model always runs in onnxruntime)."
    )


def _with_backend(adapter: Any, backend: str | None, batch_size: int | None) -> Any:
    """A loaded model's adapter with ``backend`` and ``batch_size`` applied (a torch adapter has run nothing yet)."""
    kind = getattr(adapter, "kind", "classifier")
    if kind == "torch":
        adapter.configure(backend=backend, batch_size=batch_size)
        return adapter
    _check_backend_applies(backend, kind)
    return adapter


def as_classifier(
    obj: Any,
    *,
    n_classes: int | None = None,
    batch_size: int | None = None,
    device: Any = "cpu",
    backend: str | None = None,
    name: str = "path",
    trust_code: bool = False,
    trust_torchscript: bool = False,
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
    batch_size : int, optional
        Examples per call of the native model. ``None``: chosen for a torch
        module (see :mod:`fitaudit.models.inference`); for a table model
        (scikit-learn, XGBoost, LightGBM) as many rows as fit in 256 MB of
        float64 input (:meth:`~fitaudit.models.base.Classifier.rows_per_call`);
        256 for the others.
    device : str
        Torch device (``"cpu"``, ``"cuda"``, ``"cuda:0"``); for ONNX,
        ``"cuda"`` selects the CUDA execution provider.
    backend : {"auto", "torch", "onnx", "eager"}, optional
        How a torch module runs (:mod:`fitaudit.models.inference`); ``None``
        takes the process default (``--backend``). Naming ``"torch"`` or
        ``"onnx"`` for a model it cannot apply to is an :class:`InputError`
        (``"onnx"`` fits an ONNX model); the process default applies to
        torch modules only, except that ``"torch"`` for an ONNX model is an error.
    name : str
        The argument named in errors about a model file ``obj``.
    trust_code, trust_torchscript : bool
        For a model file ``obj``: as :func:`fitaudit.models.load_model` (allow files that run code when loaded).

    Returns
    -------
    ClassifierProtocol
    """
    if backend is not None:
        check_backend(backend)
    if is_torch_module(obj):
        return wrap_native(obj, n_classes=n_classes, batch_size=batch_size, device=device, backend=backend)
    if isinstance(obj, (str, os.PathLike)):
        from fitaudit.models.io import load_model

        with using_backend(backend):  # an ONNX file checks the backend it is loaded under
            loaded = load_model(obj, n_classes=n_classes, batch_size=batch_size, device=device,
                                name=name, trust_code=trust_code, trust_torchscript=trust_torchscript)
        return _with_backend(loaded, backend, batch_size)
    if isinstance(obj, bytes) or is_instance_of(obj, "onnxruntime", "InferenceSession"):
        from fitaudit.models.onnx_adapter import OnnxClassifier

        return OnnxClassifier(
            obj, n_classes=n_classes, batch_size=batch_size or DEFAULT_BATCH_SIZE, device=str(device), backend=backend
        )
    _check_backend_applies(backend, _kind_name(obj))
    if is_sklearn_classifier(obj):
        return wrap_native(obj, n_classes=n_classes, batch_size=batch_size)
    batch_size = DEFAULT_BATCH_SIZE if batch_size is None else batch_size
    if is_classifier_adapter(obj):
        if n_classes is not None and obj.n_classes != n_classes:
            raise InputError(f"`n_classes` is {n_classes} but the given adapter has {obj.n_classes} classes.")
        return obj
    if callable(getattr(obj, "logits", None)) and isinstance(getattr(obj, "n_classes", None), int):
        if n_classes is not None and obj.n_classes != n_classes:
            raise InputError(f"`n_classes` is {n_classes} but the given model has {obj.n_classes} classes.")
        return CallableClassifier(obj.logits, n_classes=obj.n_classes, batch_size=batch_size)
    if callable(obj):
        return CallableClassifier(obj, n_classes=n_classes, batch_size=batch_size)
    raise InputError(
        "`model` must be a classifier (with n_classes, logits, predict_proba and predict), a torch "
        "nn.Module, an ONNX model (path, bytes or InferenceSession), a fitted scikit-learn "
        f"classifier, a callable returning scores, or a path to a saved model; got {type(obj).__name__}."
    )
