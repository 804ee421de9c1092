"""Generic torch architectures registered for the safetensors loader.

``{"architecture": "linear", "kwargs": {"in_features": 784, "n_classes": 10}}``
and ``{"architecture": "mlp", "kwargs": {"in_features": 784,
"hidden_sizes": [512, 512], "n_classes": 10}}``. Both flatten their input,
so they take vectors ``(n, d)`` as well as images ``(n, C, H, W)`` with
``C * H * W == in_features``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit._validation import check_int
from fitaudit.models.architectures import register_architecture


@register_architecture("linear")
def linear(in_features: int, n_classes: int) -> Any:
    """Flatten, then one linear layer: a multinomial logistic regression."""
    nn = import_optional("torch.nn", "building a torch architecture")
    in_features = check_int(in_features, "in_features", minimum=1)
    n_classes = check_int(n_classes, "n_classes", minimum=2)
    return nn.Sequential(nn.Flatten(), nn.Linear(in_features, n_classes))


@register_architecture("mlp")
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
