"""Generic torch architectures registered for the safetensors loader.

``{"architecture": "linear", "kwargs": {"in_features": 784, "n_classes": 10}}``
and ``{"architecture": "mlp", "kwargs": {"in_features": 784,
"hidden_sizes": [512, 512], "n_classes": 10}}``. Both flatten their input,
so they take vectors ``(n, d)`` as well as images ``(n, C, H, W)`` with
``C * H * W == in_features``. ``{"architecture": "resnet18", "kwargs":
{"n_classes": 1000}}`` is ResNet-18 for ImageNet-size images.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit._validation import check_int


def linear(in_features: int, n_classes: int) -> Any:
    """Flatten, then one linear layer: a multinomial logistic regression."""
    nn = import_optional("torch.nn", "building a torch architecture")
    in_features = check_int(in_features, "in_features", minimum=1)
    n_classes = check_int(n_classes, "n_classes", minimum=2)
    return nn.Sequential(nn.Flatten(), nn.Linear(in_features, n_classes))


def mlp(in_features: int, hidden_sizes: Sequence[int], n_classes: int) -> Any:
    """Flatten, then linear layers of ``hidden_sizes`` with ReLU, then the output layer."""
    nn = import_optional("torch.nn", "building a torch architecture")
    in_features = check_int(in_features, "in_features", minimum=1)
    n_classes = check_int(n_classes, "n_classes", minimum=2)
    if isinstance(hidden_sizes, (str, bytes)) or not isinstance(hidden_sizes, Sequence):
        raise InputError(f"`hidden_sizes` must be a list of positive integers; got {hidden_sizes!r}.")
    widths = [check_int(w, "hidden_sizes", minimum=1) for w in hidden_sizes]
    layers: list[Any] = [nn.Flatten()]
    for width_in, width_out in zip([in_features, *widths], widths):
        layers += [nn.Linear(width_in, width_out), nn.ReLU()]
    layers.append(nn.Linear(widths[-1] if widths else in_features, n_classes))
    return nn.Sequential(*layers)


def resnet18(n_classes: int = 1000, in_channels: int = 3, width: int = 64) -> Any:
    """ResNet-18 (He et al., "Deep residual learning for image recognition", CVPR 2016, Table 1).

    A 7x7 stride-2 stem with 3x3 max pooling, four stages of two basic blocks
    (widths w, 2w, 4w, 8w; the last three start with stride 2), global
    average pooling and a linear layer: 11.7M parameters at ``width=64``
    and 1000 classes, sized for ImageNet's 224x224 inputs (any size >= 32 works).
    """
    from fitaudit.models.shapes_nets import _basic_block

    torch = import_optional("torch", "building a torch architecture")
    nn = torch.nn
    n_classes = check_int(n_classes, "n_classes", minimum=2)
    in_channels = check_int(in_channels, "in_channels", minimum=1)
    w = check_int(width, "width", minimum=1)
    layers: list[Any] = [
        nn.Conv2d(in_channels, w, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(w), nn.ReLU(),
        nn.MaxPool2d(3, stride=2, padding=1),
    ]
    c_in = w
    for stage, c_out in enumerate((w, 2 * w, 4 * w, 8 * w)):
        for block in range(2):
            layers.append(_basic_block(nn, torch, c_in, c_out, 2 if stage > 0 and block == 0 else 1))
            c_in = c_out
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c_in, n_classes)]
    return nn.Sequential(*layers)


#: this module's networks by name, as a saved model's config.json names them
#: (:func:`fitaudit.models.architectures.build_architecture`)
ARCHITECTURES: dict[str, Callable[..., Any]] = {
    "linear": linear,
    "mlp": mlp,
    "resnet18": resnet18,
}
