"""The leakage search on image folders: features and predictions in one streamed pass.

Images come through :mod:`fitaudit.data.images` (folders or CSV lists, the
evaluation pipeline, batches decoded ahead); no pixel set is held in memory.
The search compares the centre crops a model sees (values in [0, 1], before
normalisation).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit.leakage.image_space import ImageFeatures, content_hashes, working_images


def folder_features(
    dataset: Any,
    pipeline: Any,
    *,
    model: Any = None,
    batch_size: int = 64,
    progress: bool = False,
    name: str = "--images",
) -> tuple[ImageFeatures, np.ndarray, np.ndarray | None]:
    """Digests and working images of an image folder's crops, its labels and, with a model, its predictions.

    Parameters
    ----------
    dataset : fitaudit.data.images.ImageDataset
        Checked images (:func:`fitaudit.data.images.check_images`).
    pipeline : fitaudit.data.images.EvalPipeline
    model : classifier, optional
        Predicts every normalised crop (``pipeline.normalise``).
    batch_size : int
    progress : bool
    name : str
        Option named in error messages.

    Returns
    -------
    features : ImageFeatures
    labels : ndarray of int64
    predictions : ndarray of int64 or None
    """
    hashes, works, labels, predictions = [], [], [], []
    p, c = pipeline.margin, pipeline.crop
    for batch in dataset.batches(pipeline, kind="canvas", batch_size=batch_size, progress=progress, name=name):
        crops = np.ascontiguousarray(batch.images[:, :, p : p + c, p : p + c])
        hashes.append(content_hashes(crops))
        works.append(working_images(crops))
        labels.append(batch.labels)
        if model is not None:
            try:
                predictions.append(np.asarray(model.predict(pipeline.normalise(crops)), dtype=np.int64))
            except InputError as exc:
                raise InputError(f"the model does not accept `{name}` through the pipeline (crop {c}): {exc}") from exc
    if not hashes:
        raise InputError(f"`{name}` holds no images.")
    features = ImageFeatures(np.concatenate(hashes), np.concatenate(works), (3, c, c))
    return features, np.concatenate(labels), np.concatenate(predictions) if model is not None else None
