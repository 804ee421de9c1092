"""The translational AEG's crops, cut, normalised and scored on the model's device.

Werpachowski, Gyorgy, Szepesvari, NeurIPS 2019, Sec. 5 and Appendix B: the
strongest AEG scores up to ``(4 eps + 1)^2`` translations of every image
(441 at ImageNet's eps = 5), each a crop of the image's canvas. Cut on the
host and handed over one by one (a 224 x 224 float crop is 600 KB), the
crops keep a GPU waiting. :class:`CropScorer` hands each canvas to the
model's device **once** (as uint8 pixels where the pipeline decodes them,
3 bytes a pixel), normalises the canvases there (``(x / 255 - mean) / std``
per channel, the same float32 operations as
:meth:`fitaudit.data.pipeline.EvalPipeline.to_array`: the same numbers), cuts
every requested crop there, calls the model there and reduces its logits
there to what the AEG needs: the zero-one loss, the excess logit
``l_exc = max_{i != y} logit_i - logit_y`` and the predicted class (the
first largest logit). Only those three numbers per crop come back.

A torch model on the CPU runs the same code with device ``cpu``. Models
that take numpy arrays (ONNX files, scikit-learn, callables: no
:meth:`~fitaudit.models.torch_adapter.TorchClassifier.logits_tensor`) get
their crops cut on the host, as numpy views of the canvases.

Crops are cut by one indexing kernel (``gather="index"``, the default on a
GPU, whose allocator reuses memory) or by a loop of slice copies into a
buffer kept between calls (``gather="copy"``, the default on the CPU, where
a fresh 150 MB result per batch costs page faults: 256 crops of 224 px took
2.1 ms a crop by indexing against 0.6 ms by copies into a kept buffer on
this project's busy 2-core machine); both give the same crops and both run
on any device (the tests run both on the CPU).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from fitaudit._errors import InputError
from fitaudit._validation import check_choice
from fitaudit.data.pipeline import normalise_tensor
from fitaudit.models.pipeline_classifier import PipelineClassifier

#: how crops are cut on a device: one indexing kernel, or slice copies into a kept buffer
GATHERS = ("index", "copy")


def device_model(model: Any) -> tuple[Any, tuple[float, ...] | None, tuple[float, ...] | None] | None:
    """``(adapter, mean, std)`` when ``model`` scores tensors on a device, else ``None``.

    ``model`` is a classifier adapter, or a
    :class:`~fitaudit.models.pipeline_classifier.PipelineClassifier` around one (whose
    normalisation then moves to the device: ``mean`` and ``std``). The
    adapter must have ``to_device`` and ``logits_tensor`` and take
    channels-first images as they are (no layout change, no fixed input
    shape).
    """
    inner, mean, std = model, None, None
    if isinstance(model, PipelineClassifier):
        inner, mean, std = model.model, model.pipeline.mean, model.pipeline.std
    usable = (
        callable(getattr(inner, "logits_tensor", None)) and callable(getattr(inner, "to_device", None))
        and getattr(inner, "image_layout", None) is None and getattr(inner, "input_shape", None) is None
    )
    return (inner, mean, std) if usable else None


def unit_canvases(canvases: np.ndarray) -> np.ndarray:
    """Canvases as float32 in [0, 1]: uint8 pixels divided by 255 (as the pipeline's table), floats as they are."""
    if canvases.dtype == np.uint8:
        return canvases.astype(np.float32) / np.float32(255.0)
    return np.asarray(canvases, dtype=np.float32)


class CropScorer:
    """Outcomes of a model on crops of canvases, computed on the model's device.

    Parameters
    ----------
    model : classifier adapter or PipelineClassifier
        What scores the crops (see :func:`device_model`).
    canvases : ndarray, shape (m, C, S_h, S_w)
        uint8 pixels (0-255) or floats in [0, 1].
    height, width : int
        The crops' size.
    gather : {"index", "copy"}, optional
        How crops are cut on a device (module docstring); default ``"index"``
        on a GPU, ``"copy"`` elsewhere.

    Attributes
    ----------
    device : torch.device or None
        Where the crops are made (``None``: on the host, in numpy).
    """

    def __init__(self, model: Any, canvases: np.ndarray, *, height: int, width: int, gather: str | None = None) -> None:
        self.height, self.width = height, width
        self.model = model
        path = device_model(model)
        self._buffer: Any = None
        if path is None:
            self.device = None
            self._canvases: Any = unit_canvases(canvases)
            self.gather = "numpy"
            return
        adapter, mean, std = path
        import torch

        self.device = adapter.device
        self.gather = check_choice(gather, "gather", GATHERS) if gather is not None else (
            "index" if self.device.type == "cuda" else "copy")
        images = adapter.to_device(canvases).to(torch.float32)  # the one copy of the images to the device
        if canvases.dtype == np.uint8:
            images = images / 255.0
        if mean is not None and std is not None:
            images = normalise_tensor(images, mean, std)
        self._canvases = images
        self._adapter = adapter

    def _crops(self, rows: np.ndarray, tops: np.ndarray, lefts: np.ndarray) -> Any:
        """The crops whose top-left corners are ``(tops, lefts)`` in canvases ``rows``, on the device."""
        import torch

        h, w = self.height, self.width
        if self.gather == "index":
            windows = self._canvases.unfold(2, h, 1).unfold(3, w, 1)
            index = [torch.as_tensor(v, device=self.device) for v in (rows, tops, lefts)]
            return windows[index[0], :, index[1], index[2]]
        n, channels = len(rows), self._canvases.shape[1]
        if self._buffer is None or self._buffer.shape[0] < n:
            self._buffer = torch.empty((n, channels, h, w), dtype=self._canvases.dtype, device=self.device)
        out = self._buffer[:n]
        for k, (i, a, b) in enumerate(zip(rows.tolist(), tops.tolist(), lefts.tolist())):
            out[k].copy_(self._canvases[i, :, a : a + h, b : b + w])
        return out

    def score(
        self, rows: np.ndarray, tops: np.ndarray, lefts: np.ndarray, labels: np.ndarray, n_classes: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Zero-one loss, excess logit and predicted class on the crops, as host arrays.

        Parameters
        ----------
        rows, tops, lefts : ndarray of int, shape (n,)
            Canvas and top-left corner of each crop.
        labels : ndarray of int, shape (n,)
            The true class of each crop.
        n_classes : int
            The width the model's scores must have.

        Returns
        -------
        wrong : ndarray of bool, (n,)
        excess : ndarray of float64, (n,)
            ``max_{i != y} logit_i - logit_y`` in float64.
        prediction : ndarray of int64, (n,)
        """
        if self.device is None:
            windows = sliding_window_view(self._canvases, (self.height, self.width), axis=(2, 3))
            logits = host_logits(self.model, windows[rows, :, tops, lefts], n_classes)
            wrong, excess = margin_outcomes(logits, labels)
            return wrong, excess, logits.argmax(axis=1)
        import torch

        logits = self._adapter.logits_tensor(self._crops(rows, tops, lefts))
        if logits.shape[1] != n_classes:
            raise InputError(f"`model` returned scores of shape {tuple(logits.shape)} for {len(rows)} images; "
                             f"expected ({len(rows)}, {n_classes}).")
        truth = torch.as_tensor(labels, device=self.device)[:, None]
        prediction = logits.argmax(dim=1)  # the first largest, as numpy's argmax
        others = logits.scatter(1, truth, float("-inf")).amax(dim=1)
        excess = others - logits.gather(1, truth)[:, 0]
        wrong = prediction != truth[:, 0]
        return wrong.cpu().numpy(), excess.cpu().numpy(), prediction.cpu().numpy()


def margin_outcomes(logits: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zero-one loss and excess logit ``l_exc = max_{i != y} logit_i - logit_y`` on the host.

    The prediction is the first index of the largest logit (``numpy.argmax``).

    Returns
    -------
    wrong : ndarray of bool, shape (n,)
    excess : ndarray of float64, shape (n,)
    """
    logits = logits.astype(np.float64)
    rows = np.arange(len(logits))
    true_logit = logits[rows, labels]
    others = logits.copy()
    others[rows, labels] = -np.inf
    return logits.argmax(axis=1) != labels, others.max(axis=1) - true_logit


def host_logits(model: Any, images: np.ndarray, n_classes: int) -> np.ndarray:
    """Call ``model.logits`` on host images and check the shape and finiteness of what comes back."""
    logits = np.asarray(model.logits(np.ascontiguousarray(images, dtype=np.float32)))
    if logits.shape != (len(images), n_classes):
        raise InputError(
            f"`model` returned scores of shape {logits.shape} for {len(images)} images; "
            f"expected ({len(images)}, {n_classes})."
        )
    if not np.all(np.isfinite(logits)):
        raise InputError("`model` returned NaN or infinite scores.")
    return logits
