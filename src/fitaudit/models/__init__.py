"""One adapter protocol for every model.

:func:`as_classifier` wraps a torch ``nn.Module``, an ONNX model, a fitted
scikit-learn classifier or a plain callable in a :class:`Classifier` with
``n_classes``, ``batch_size`` and batched ``logits``, ``predict_proba`` and
``predict`` on numpy arrays. :func:`load_model` loads model files safely
(ONNX, safetensors + config, skops; never pickle). torch and onnxruntime are
imported only when such a model is used.
"""

from __future__ import annotations

from fitaudit.models.base import Classifier, softmax
from fitaudit.models.callable_adapter import CallableClassifier
from fitaudit.models.dispatch import as_classifier, is_classifier_adapter
from fitaudit.models.io import load_model, load_torch_module, save_torch_model
from fitaudit.models.sklearn_adapter import SklearnClassifier

__all__ = [
    "CallableClassifier",
    "Classifier",
    "SklearnClassifier",
    "as_classifier",
    "is_classifier_adapter",
    "load_model",
    "load_torch_module",
    "save_torch_model",
    "softmax",
]
