"""What a model's input declares: grey or RGB, channels first or last, or flat.

The evaluation pipeline (:class:`fitaudit.data.pipeline.EvalPipeline`) gives
images channels first, ``(n, c, H, W)``, with ``c`` = 1 (grey) or 3 (RGB).
A model file declares the shape of one example (an ONNX graph's input, a
torch config's ``input_shape``, a scikit-learn model's ``n_features_in_``);
:func:`input_spec` reads from it how many channels to decode and in which
layout the model takes them, and :meth:`fitaudit.models.base.Classifier.logits`
puts channels-first images into that layout:

* channels first ``(c, H, W)``: as they are (torch's and ONNX's convention);
* channels last ``(H, W, c)``: transposed (Keras, TensorFlow exports);
* no channel axis ``(H, W)``: grey images with the axis dropped (a Keras
  ``Input((28, 28))`` followed by ``Flatten``);
* flat ``(H * W * c,)``: each image flattened row by row, the channels of a
  pixel together (``numpy.asarray(pil_image).reshape(-1)``), for
  scikit-learn models fitted on flattened images.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

CHANNELS_FIRST = "channels_first"
CHANNELS_LAST = "channels_last"
NO_CHANNEL_AXIS = "no_channel_axis"
FLAT = "flat"

#: channel counts of grey and colour images
_CHANNELS = (1, 3)


@dataclasses.dataclass(frozen=True)
class InputSpec:
    """The layout, channel count and side of a model's image input (each ``None`` when undeclared).

    Attributes
    ----------
    layout : {"channels_first", "channels_last", "no_channel_axis", "flat"} or None
    channels : {1, 3} or None
    size : int or None
        The side of a square input (the crop's default), when declared.
    """

    layout: str | None = None
    channels: int | None = None
    size: int | None = None


def _square_side(features: int, channels: int) -> int | None:
    """``s`` with ``s * s * channels == features``, or None."""
    if features % channels:
        return None
    side = math.isqrt(features // channels)
    return side if side * side * channels == features else None


def input_spec(shape: Sequence[int | None] | None) -> InputSpec:
    """What one example's declared shape says (``None`` entries are free sizes).

    Three dimensions: channels first when the first is 1 or 3 (torch's
    convention, also when both ends are), channels last when only the last
    is. Two: grey without a channel axis. One dimension of ``n`` features:
    flat, grey when ``n`` is a square ``s * s``, RGB when ``n = 3 s * s``
    (never both). Anything else: unknown.
    """
    if shape is None:
        return InputSpec()
    dims = tuple(shape)
    if len(dims) == 1:
        features = dims[0]
        if not isinstance(features, int):
            return InputSpec(layout=FLAT)
        for channels in _CHANNELS:
            side = _square_side(features, channels)
            if side is not None:
                return InputSpec(layout=FLAT, channels=channels, size=side)
        return InputSpec(layout=FLAT)
    if len(dims) == 2:
        height, width = dims
        return InputSpec(layout=NO_CHANNEL_AXIS, channels=1,
                         size=height if isinstance(height, int) and height == width else None)
    if len(dims) != 3:
        return InputSpec()
    first, last = dims[0], dims[-1]
    if first in _CHANNELS:
        height, width = dims[1], dims[2]
        layout, channels = CHANNELS_FIRST, first
    elif last in _CHANNELS:
        height, width = dims[0], dims[1]
        layout, channels = CHANNELS_LAST, last
    else:
        return InputSpec()
    size = height if isinstance(height, int) and height == width else None
    return InputSpec(layout=layout, channels=channels, size=size)


def channels_height_width(shape: Sequence[int | None] | None,
                          layout: str | None = None) -> tuple[int | None, int | None, int | None] | None:
    """(channels, height, width) of a declared image input, read in its layout (``layout``: the model's own,
    e.g. a Keras model's channels last; default :func:`input_spec`'s reading); None for another shape."""
    if shape is None:
        return None
    dims = tuple(shape)
    layout = layout or input_spec(dims).layout
    if len(dims) == 2 and layout == NO_CHANNEL_AXIS:
        return 1, dims[0], dims[1]
    if len(dims) != 3:
        return None
    if layout == CHANNELS_LAST:
        return dims[2], dims[0], dims[1]
    return dims[0], dims[1], dims[2]


def to_layout(images: np.ndarray, layout: str | None) -> np.ndarray:
    """Channels-first images ``(n, c, H, W)`` in ``layout`` (other arrays, and other layouts, unchanged)."""
    if images.ndim != 4 or layout not in (CHANNELS_LAST, NO_CHANNEL_AXIS, FLAT):
        return images
    if layout == NO_CHANNEL_AXIS:
        return images[:, 0] if images.shape[1] == 1 else images
    moved = images.transpose(0, 2, 3, 1)
    return moved.reshape(len(images), -1) if layout == FLAT else moved


def first_layer_shape(module: Any) -> tuple[int | None, ...] | None:
    """One example's shape as a torch module's first layer takes it: ``(c, ?, ?)`` for a convolution, ``(n,)`` for a linear layer."""
    for layer in module.modules():
        channels = getattr(layer, "in_channels", None)
        if isinstance(channels, int) and getattr(layer, "kernel_size", None) is not None:
            return (channels, None, None)
        features = getattr(layer, "in_features", None)
        if isinstance(features, int):
            return (features,)
    return None
