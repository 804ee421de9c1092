"""The network families of the PGDL competition as torch architectures.

The NeurIPS 2020 "Predicting Generalization in Deep Learning" tasks
(Jiang et al., 2020; docs/pgdl.md#competition-tasks-on-disk) used three
families, all trained to ~100% training accuracy:

* ``pgdl_vgg`` -- VGG-like: 1 or 3 blocks of conv-relu-conv-relu-maxpool
  (3x3 'same' convolutions, widths w, 2w, 4w), then 1 or 2 dense layers
  of 128 units with ReLU (dropout before each), then the output layer;
* ``pgdl_nin`` -- Network-in-Network: blocks of a 3x3 convolution (stride
  2 from the second block on) and two 1x1 convolutions ("mlpconv"), each
  followed by ReLU (and batch norm before it, optionally), dropout between
  blocks, a final 1x1 convolution to the classes and global average
  pooling;
* ``pgdl_allconv`` -- fully convolutional: 3x3 convolutions (stride 2 at
  every other layer) with or without batch norm, a 1x1 convolution to the
  classes and global average pooling.

Every module is an ``nn.Sequential`` of standard layers built for a fixed
input size, with TensorFlow's 'same' padding written out (a ``ZeroPad2d``
before a stride-2 convolution that pads one pixel more on the bottom and
right), so that each network is exactly expressible as a Keras layer config
(:func:`fitaudit.pgdl.task.write_task` writes it in the competition's
format). They take channels-first images ``(n, C, H, W)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit._validation import check_float, check_int


def _size(image_size: Any) -> tuple[int, int]:
    if isinstance(image_size, int) and not isinstance(image_size, bool):
        image_size = [image_size, image_size]
    if not isinstance(image_size, Sequence) or len(image_size) != 2:
        raise InputError(f"`image_size` must be an integer or [height, width]; got {image_size!r}.")
    return check_int(image_size[0], "image_size", minimum=1), check_int(image_size[1], "image_size", minimum=1)


def _same_conv(nn: Any, c_in: int, c_out: int, kernel: int, stride: int, size: tuple[int, int]) -> tuple[list[Any], tuple[int, int]]:
    """A convolution with TensorFlow's 'same' padding at input ``size``: (modules, output size)."""
    pads, out = [], []
    for n in size:
        o = math.ceil(n / stride)
        total = max((o - 1) * stride + kernel - n, 0)
        pads.append((total // 2, total - total // 2))
        out.append(o)
    (top, bottom), (left, right) = pads
    if top == bottom and left == right:
        return [nn.Conv2d(c_in, c_out, kernel, stride=stride, padding=(top, left))], (out[0], out[1])
    return [nn.ZeroPad2d((left, right, top, bottom)), nn.Conv2d(c_in, c_out, kernel, stride=stride)], (out[0], out[1])


def _common(n_classes: Any, in_channels: Any, width: Any, dropout: Any) -> tuple[int, int, int, float]:
    return (
        check_int(n_classes, "n_classes", minimum=2),
        check_int(in_channels, "in_channels", minimum=1),
        check_int(width, "width", minimum=1),
        check_float(dropout, "dropout", low=0.0, high=1.0, high_inclusive=False),
    )


def pgdl_vgg(
    n_classes: int,
    in_channels: int = 3,
    image_size: Any = 32,
    width: int = 16,
    blocks: int = 1,
    dense_layers: int = 1,
    dense_width: int = 128,
    dropout: float = 0.0,
    batch_norm: bool = False,
) -> Any:
    """VGG-like: ``blocks`` x (conv-relu-conv-relu-maxpool), ``dense_layers`` x dense 128, output.

    Block b has ``width * 2**b`` filters; 2x2 max pooling halves the size
    (an odd size is floored, as Keras' 'valid' pooling does). With
    ``batch_norm``, batch norm sits between each convolution and its ReLU.
    """
    nn = import_optional("torch.nn", "building a PGDL network")
    n_classes, in_channels, width, dropout = _common(n_classes, in_channels, width, dropout)
    blocks = check_int(blocks, "blocks", minimum=1)
    dense_layers = check_int(dense_layers, "dense_layers", minimum=1)
    dense_width = check_int(dense_width, "dense_width", minimum=1)
    size = _size(image_size)
    layers: list[Any] = []
    c_in = in_channels
    for block in range(blocks):
        c_out = width * 2**block
        for _ in range(2):
            convs, size = _same_conv(nn, c_in, c_out, 3, 1, size)
            layers += convs + ([nn.BatchNorm2d(c_out)] if batch_norm else []) + [nn.ReLU()]
            c_in = c_out
        if min(size) < 2:
            raise InputError(f"`blocks`: {blocks} blocks pool an image of size {_size(image_size)} below 1 pixel.")
        layers.append(nn.MaxPool2d(2))
        size = (size[0] // 2, size[1] // 2)
    layers.append(nn.Flatten())
    features = c_in * size[0] * size[1]
    for _ in range(dense_layers):
        layers += ([nn.Dropout(dropout)] if dropout else []) + [nn.Linear(features, dense_width), nn.ReLU()]
        features = dense_width
    layers.append(nn.Linear(features, n_classes))
    return nn.Sequential(*layers)


def pgdl_nin(
    n_classes: int,
    in_channels: int = 3,
    image_size: Any = 32,
    width: int = 32,
    blocks: int = 2,
    dropout: float = 0.0,
    batch_norm: bool = True,
) -> Any:
    """Network-in-Network: ``blocks`` x (conv 3x3 - conv 1x1 - conv 1x1), 1x1 conv to classes, global average pooling.

    Every convolution is followed by (batch norm and) ReLU; the 3x3
    convolution of blocks after the first has stride 2; dropout follows
    every block.
    """
    nn = import_optional("torch.nn", "building a PGDL network")
    n_classes, in_channels, width, dropout = _common(n_classes, in_channels, width, dropout)
    blocks = check_int(blocks, "blocks", minimum=1)
    size = _size(image_size)
    layers: list[Any] = []
    c_in = in_channels
    for block in range(blocks):
        for kernel, stride in ((3, 2 if block else 1), (1, 1), (1, 1)):
            convs, size = _same_conv(nn, c_in, width, kernel, stride, size)
            layers += convs + ([nn.BatchNorm2d(width)] if batch_norm else []) + [nn.ReLU()]
            c_in = width
        if dropout:
            layers.append(nn.Dropout(dropout))
    layers += [nn.Conv2d(c_in, n_classes, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten()]
    return nn.Sequential(*layers)


def pgdl_allconv(
    n_classes: int,
    in_channels: int = 3,
    image_size: Any = 32,
    width: int = 32,
    depth: int = 4,
    dropout: float = 0.0,
    batch_norm: bool = True,
) -> Any:
    """Fully convolutional: ``depth`` 3x3 convolutions (stride 2 at every second), 1x1 conv to classes, global average pooling.

    Convolution i (from 0) has ``width * 2**(i // 2)`` filters and stride 2
    when i is odd; each is followed by (batch norm and) ReLU; dropout
    before the classifier convolution.
    """
    nn = import_optional("torch.nn", "building a PGDL network")
    n_classes, in_channels, width, dropout = _common(n_classes, in_channels, width, dropout)
    depth = check_int(depth, "depth", minimum=1)
    size = _size(image_size)
    layers: list[Any] = []
    c_in = in_channels
    for i in range(depth):
        c_out = width * 2 ** (i // 2)
        convs, size = _same_conv(nn, c_in, c_out, 3, 2 if i % 2 else 1, size)
        layers += convs + ([nn.BatchNorm2d(c_out)] if batch_norm else []) + [nn.ReLU()]
        c_in = c_out
    if dropout:
        layers.append(nn.Dropout(dropout))
    layers += [nn.Conv2d(c_in, n_classes, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten()]
    return nn.Sequential(*layers)


#: this module's networks by name, as a saved model's config.json names them
#: (:func:`fitaudit.models.architectures.build_architecture`)
ARCHITECTURES: dict[str, Callable[..., Any]] = {
    "pgdl_vgg": pgdl_vgg,
    "pgdl_nin": pgdl_nin,
    "pgdl_allconv": pgdl_allconv,
}
