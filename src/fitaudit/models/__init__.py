"""One classifier protocol for every model.

:class:`ClassifierProtocol` is what the instruments need: ``n_classes`` and
``logits``, ``predict_proba``, ``predict`` on numpy arrays. An object that has
them passes through :func:`as_classifier` unchanged; a torch ``nn.Module``,
an ONNX model, a fitted scikit-learn classifier or a plain callable is
wrapped in a :class:`Classifier` adapter (batched, with ``batch_size``).
:func:`load_model` loads model files safely (the formats of
:data:`fitaudit.models.formats.FORMATS`: ONNX, safetensors + config,
Hugging Face, Keras, skops, XGBoost, LightGBM; never pickle);
:func:`save_torch_model` and :func:`export_onnx` write them. torch and
onnxruntime are imported only when such a model is used.
"""

from __future__ import annotations

from fitaudit.models.base import Classifier, ClassifierProtocol, softmax
from fitaudit.models.callable_adapter import CallableClassifier
from fitaudit.models.dispatch import as_classifier, is_classifier_adapter
from fitaudit.models.formats.onnx import export_onnx
from fitaudit.models.formats.torch_folder import load_torch_module, save_torch_model
from fitaudit.models.io import load_model
from fitaudit.models.sklearn_adapter import SklearnClassifier

__all__ = [
    "CallableClassifier",
    "Classifier",
    "ClassifierProtocol",
    "SklearnClassifier",
    "as_classifier",
    "export_onnx",
    "is_classifier_adapter",
    "load_model",
    "load_torch_module",
    "save_torch_model",
    "softmax",
]
