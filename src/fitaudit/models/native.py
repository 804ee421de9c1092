"""A native model in its adapter: a torch module or a fitted scikit-learn classifier.

The one place that wraps the models a loader produces
(:func:`fitaudit.models.io.load_model`) and the native models a caller hands
to :func:`fitaudit.models.as_classifier`, so that loading a file never needs
the dispatcher that itself loads files (no import cycle).
"""

from __future__ import annotations

import sys
from typing import Any

from fitaudit._errors import InputError
from fitaudit.models.base import Classifier
from fitaudit.models.sklearn_adapter import SklearnClassifier, is_sklearn_classifier

#: rows per call of an image model that is not a torch module (ONNX, a callable), when the caller names none
DEFAULT_BATCH_SIZE = 256

#: the kinds of model that score tables row by row: without a named batch size they take a memory-bounded chunk
#: of the table a call (:meth:`fitaudit.models.base.Classifier.rows_per_call`), not image-sized batches
TABLE_KINDS = ("sklearn", "xgboost", "lightgbm")


def is_instance_of(obj: Any, module: str, attribute: str) -> bool:
    """``isinstance(obj, module.attribute)`` without importing ``module``."""
    loaded = sys.modules.get(module)
    cls = getattr(loaded, attribute, None) if loaded is not None else None
    return isinstance(cls, type) and isinstance(obj, cls)


def is_torch_module(obj: Any) -> bool:
    """Whether ``obj`` is a torch ``nn.Module`` (torch is not imported to tell)."""
    return is_instance_of(obj, "torch.nn", "Module")


def wrap_native(
    obj: Any, *, n_classes: int | None = None, batch_size: int | None = None, device: Any = "cpu",
    backend: str | None = None,
) -> Classifier:
    """A torch module in a :class:`~fitaudit.models.torch_adapter.TorchClassifier`, a fitted scikit-learn
    classifier in a :class:`~fitaudit.models.sklearn_adapter.SklearnClassifier` (arguments as in
    :func:`fitaudit.models.as_classifier`; ``backend`` and ``device`` apply to torch modules)."""
    if is_torch_module(obj):
        from fitaudit.models.torch_adapter import TorchClassifier

        return TorchClassifier(obj, n_classes=n_classes, batch_size=batch_size, device=device, backend=backend)
    if is_sklearn_classifier(obj):
        return SklearnClassifier(obj, n_classes=n_classes, batch_size=batch_size)
    raise InputError(f"`model` must be a torch module or a fitted scikit-learn classifier; got {type(obj).__name__}.")
