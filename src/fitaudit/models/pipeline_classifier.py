"""A classifier on [0, 1] images that normalises before its model: :class:`PipelineClassifier`."""

from __future__ import annotations

from typing import Any

import numpy as np

from fitaudit.data.pipeline import EvalPipeline


class PipelineClassifier:
    """A classifier on [0, 1] images ``(n, 3, C, C)``: normalises, then calls the model.

    Lets the translational AEG shift un-normalised canvases (normalising a
    shifted crop equals shifting the normalised image;
    docs/overfit.md#translational-aegs-for-images).

    Parameters
    ----------
    model : classifier
        Anything with ``n_classes`` and ``logits`` (:class:`fitaudit.models.ClassifierProtocol`).
    pipeline : EvalPipeline
    """

    def __init__(self, model: Any, pipeline: EvalPipeline) -> None:
        self.model = model
        self.pipeline = pipeline

    def __repr__(self) -> str:
        return f"PipelineClassifier({self.model!r}, {self.pipeline!r})"

    def __getattr__(self, name: str) -> Any:
        """What the wrapped model says of itself (``kind``, ``batch_size``, ``image_layout`` ...)."""
        if name.startswith("__") or name in ("model", "pipeline"):
            raise AttributeError(name)
        return getattr(self.model, name)

    @property
    def n_classes(self) -> int:
        """The wrapped model's number of classes."""
        return int(self.model.n_classes)

    def logits(self, x: Any) -> np.ndarray:
        """The model's scores on ``(x - mean) / std``."""
        return np.asarray(self.model.logits(self.pipeline.normalise(x)))

    def predict_proba(self, x: Any) -> np.ndarray:
        """Softmax of :meth:`logits`."""
        from fitaudit.models.base import softmax

        return softmax(self.logits(x).astype(np.float64))

    def predict(self, x: Any) -> np.ndarray:
        """Index of the first largest score."""
        return np.argmax(self.logits(x), axis=1)
