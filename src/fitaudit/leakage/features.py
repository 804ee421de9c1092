"""Feature spaces of the near-duplicate search besides the image view.

* Tabular data: features standardised with the training data's mean and
  standard deviation (:func:`standardise`), Euclidean distance.
* A torch model's penultimate features (:func:`penultimate_features`): the
  input of its last linear layer, scaled to unit length (:func:`unit_rows`).
* Images: :mod:`fitaudit.leakage.image_space` (small views compared up to a
  small shift), built on :func:`_area_weights` here.

Barz & Denzler (J. Imaging 2020, "Do we train on test data? Purging CIFAR of
near-duplicates") searched a classifier's feature space; the image view is a
model-free counterpart that finds copies, re-encodings, small shifts and
brightness changes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._optional import import_optional

#: RGB -> (Y, Cb, Cr) of ITU-R BT.601, rows (the first row is the luminance)
YCBCR = np.array([[0.299, 0.587, 0.114], [-0.169, -0.331, 0.5], [0.5, -0.419, -0.081]], dtype=np.float32)


def luminance(images: np.ndarray) -> np.ndarray:
    """The luminance of channels-first images ``(n, C, H, W)``: BT.601 (:data:`YCBCR`) for three channels, the
    channel mean otherwise; shape (n, H, W), float32."""
    array = np.asarray(images, dtype=np.float32)
    return np.einsum("c,nchw->nhw", YCBCR[0], array) if array.shape[1] == 3 else array.mean(axis=1)


def _area_weights(source: int, target: int) -> np.ndarray:
    """Matrix (target, source) averaging source pixels into target cells by overlapping area."""
    edges = np.linspace(0.0, source, target + 1)
    left = np.arange(source)[None, :]
    overlap = np.clip(np.minimum(edges[1:, None], left + 1) - np.maximum(edges[:-1, None], left), 0.0, None)
    return (overlap / overlap.sum(axis=1, keepdims=True)).astype(np.float32)


def unit_rows(features: np.ndarray) -> np.ndarray:
    """Rows scaled to unit Euclidean length (all-zero rows stay zero)."""
    norms = np.linalg.norm(features, axis=1, keepdims=True)
    return (features / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def standardise(train: np.ndarray, scored: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tabular features standardised with the training data's mean and standard deviation.

    Constant training columns are centred only. Returns float32 copies of
    ``(train, scored)``.
    """
    train = np.asarray(train, dtype=np.float64).reshape(len(train), -1)
    scored = np.asarray(scored, dtype=np.float64).reshape(len(scored), -1)
    mean = train.mean(axis=0)
    std = train.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    return ((train - mean) / std).astype(np.float32), ((scored - mean) / std).astype(np.float32)


def penultimate_layer(classifier: Any) -> Any:
    """The last ``torch.nn.Linear`` layer of a wrapped torch model: its input is the penultimate features.

    Raises
    ------
    InputError
        The model is not a torch model, or has no linear layer (e.g. a
        convolutional net ending in global pooling).
    """
    from fitaudit.models.pipeline_classifier import PipelineClassifier

    if isinstance(classifier, PipelineClassifier):
        return penultimate_layer(classifier.model)
    torch = import_optional("torch", "penultimate features of a torch model")
    module = getattr(classifier, "model", None)
    if getattr(classifier, "kind", None) != "torch" or not isinstance(module, torch.nn.Module):
        raise InputError("`model` must be a torch model (fitaudit.models.TorchClassifier) for penultimate features.")
    linears = [m for m in module.modules() if isinstance(m, torch.nn.Linear)]
    if not linears:
        raise InputError("`model` has no torch.nn.Linear layer, so it has no penultimate features to compare.")
    return linears[-1]


def penultimate_features(classifier: Any, x: Any, *, batch_size: int = 256) -> np.ndarray:
    """Unit-length inputs of a torch model's last linear layer (its penultimate features).

    Each batch goes to the model's device once, as ``x`` holds it; there a
    :class:`~fitaudit.models.pipeline_classifier.PipelineClassifier`'s normalisation is
    applied (:func:`fitaudit.data.pipeline.normalise_tensor`: the same float32
    operations as the pipeline's, the same numbers) and the module is called;
    only the features come back.

    Parameters
    ----------
    classifier : fitaudit.models.TorchClassifier or fitaudit.models.pipeline_classifier.PipelineClassifier
        The wrapped torch model; or one taking [0, 1] image arrays that it
        normalises first (the one pipeline rule,
        :mod:`fitaudit.data.pipeline_rule`): the features of the normalised inputs.
    x : array-like, shape (n, ...)
        Inputs as ``classifier`` takes them.
    batch_size : int

    Returns
    -------
    ndarray of float32, shape (n, d)

    Raises
    ------
    InputError
        The model is not a torch model, or has no linear layer.
    """
    from fitaudit.data.pipeline import normalise_tensor
    from fitaudit.models.pipeline_classifier import PipelineClassifier

    layer = penultimate_layer(classifier)
    pipeline = classifier.pipeline if isinstance(classifier, PipelineClassifier) else None
    adapter = classifier.model if pipeline is not None else classifier
    torch = import_optional("torch", "penultimate features of a torch model")
    module = adapter.model
    dtype = torch.float64 if adapter.input_dtype == np.float64 else torch.float32
    captured: list[np.ndarray] = []

    def hook(_: Any, inputs: tuple[Any, ...]) -> None:
        captured.append(inputs[0].detach().flatten(1).to("cpu", torch.float32).numpy())

    handle = layer.register_forward_pre_hook(hook)
    try:
        array = np.asarray(x)
        # the module itself, not classifier.logits: an ONNX or traced backend would never call the hook
        with torch.inference_mode():
            for start in range(0, len(array), batch_size):
                batch = adapter.to_device(array[start : start + batch_size])  # the batch's one trip to the device
                if pipeline is not None:
                    batch = normalise_tensor(batch.to(torch.float32), pipeline.mean, pipeline.std)
                module(batch.to(dtype))
    finally:
        handle.remove()
    return unit_rows(np.concatenate(captured, axis=0))
