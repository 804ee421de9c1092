"""Small CNNs for the Shapes world: an AlexNet-like and a ResNet-like family.

Both take images ``(n, 3, H, W)`` in [0, 1] (any H, W >= 16; pooling is
adaptive), are registered as architectures (``{"architecture":
"shapes_alexnet", "kwargs": {"n_classes": 12, "width": 24}}``) and are
sized so that training on a few thousand 32x32 renders takes minutes on a
CPU: at the default widths about 210k (AlexNet-like) and 175k (ResNet-like)
parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fitaudit._optional import import_optional
from fitaudit._validation import check_int


def shapes_alexnet(n_classes: int, width: int = 24) -> Any:
    """AlexNet-like: four 5x5/3x3 convolutions with max pooling, then two dense layers.

    conv(3 -> w, 5x5) pool, conv(w -> 2w) pool, conv(2w -> 8w/3),
    conv(8w/3 -> 8w/3) pool to 4x4, dense 128 with dropout 0.3, dense k.
    Batch normalisation after every convolution stands in for AlexNet's
    local response normalisation (it trains much faster on a CPU budget).
    """
    nn = import_optional("torch.nn", "building a Shapes CNN")
    n_classes = check_int(n_classes, "n_classes", minimum=2)
    w = check_int(width, "width", minimum=1)
    w3 = (8 * w) // 3
    return nn.Sequential(
        nn.Conv2d(3, w, 5, padding=2),
        nn.BatchNorm2d(w),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(w, 2 * w, 3, padding=1),
        nn.BatchNorm2d(2 * w),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(2 * w, w3, 3, padding=1),
        nn.BatchNorm2d(w3),
        nn.ReLU(),
        nn.Conv2d(w3, w3, 3, padding=1),
        nn.BatchNorm2d(w3),
        nn.ReLU(),
        nn.AdaptiveMaxPool2d(4),
        nn.Flatten(),
        nn.Dropout(0.3),
        nn.Linear(16 * w3, 128),
        nn.ReLU(),
        nn.Linear(128, n_classes),
    )


def _basic_block(nn: Any, torch: Any, c_in: int, c_out: int, stride: int) -> Any:
    """Two 3x3 convolutions with batch norm and an identity (or 1x1) shortcut."""

    class BasicBlock(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(c_out)
            self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(c_out)
            self.shortcut = (
                nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out))
                if stride != 1 or c_in != c_out
                else nn.Identity()
            )

        def forward(self, x: Any) -> Any:
            out = torch.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return torch.relu(out + self.shortcut(x))

    return BasicBlock()


def shapes_resnet(n_classes: int, width: int = 24, blocks_per_stage: int = 1) -> Any:
    """ResNet-like: a 3x3 stem with 2x2 max pooling (as ResNet's stem downsamples),
    three stages of basic blocks (widths w, 2w, 4w; strides 1, 2, 2), global average pooling."""
    torch = import_optional("torch", "building a Shapes CNN")
    nn = torch.nn
    n_classes = check_int(n_classes, "n_classes", minimum=2)
    w = check_int(width, "width", minimum=1)
    blocks = check_int(blocks_per_stage, "blocks_per_stage", minimum=1)
    layers: list[Any] = [nn.Conv2d(3, w, 3, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU(), nn.MaxPool2d(2)]
    c_in = w
    for stage, c_out in enumerate((w, 2 * w, 4 * w)):
        for block in range(blocks):
            stride = 2 if stage > 0 and block == 0 else 1
            layers.append(_basic_block(nn, torch, c_in, c_out, stride))
            c_in = c_out
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c_in, n_classes)]
    return nn.Sequential(*layers)


#: this module's networks by name, as a saved model's config.json names them
#: (:func:`fitaudit.models.architectures.build_architecture`)
ARCHITECTURES: dict[str, Callable[..., Any]] = {
    "shapes_alexnet": shapes_alexnet,
    "shapes_resnet": shapes_resnet,
}
