"""Torch modules as the Keras layer configs of PGDL tasks: :func:`keras_config_from_torch`.

The writer of PGDL tasks (:func:`fitaudit.pgdl.task.write_task`) stores a
torch network in the competition's form: the ``model_config`` list of layer
dicts and the channels-last ``input_shape`` that
:func:`fitaudit.models.conversion.keras_layers.build_torch` reads back,
for the layers the zoo's architectures use. ``padding="same"`` is written
where the torch padding is TensorFlow's rule for that size (the smaller
half before), so the round trip computes the same function.
"""

from __future__ import annotations

import math
from typing import Any

from fitaudit._errors import InputError
from fitaudit._optional import import_optional
from fitaudit.models.conversion.keras_layers import ACTIVATION_NAMES, as_pair, same_padding


def _leaf_modules(module: Any, nn: Any) -> list[Any]:
    if isinstance(module, nn.Sequential):
        return [leaf for child in module for leaf in _leaf_modules(child, nn)]
    return [module]


def _input_shapes(torch: Any, leaves: list[Any], input_shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The shape (without batch axis) entering every leaf, by a forward pass on zeros."""
    shapes: list[tuple[int, ...]] = []
    x = torch.zeros((1, *input_shape))
    with torch.no_grad():
        for leaf in leaves:
            shapes.append(tuple(x.shape[1:]))
            was_training = leaf.training
            leaf.eval()
            x = leaf(x)
            leaf.train(was_training)
    return shapes


def keras_config_from_torch(module: Any, input_shape: Any) -> tuple[list[dict[str, Any]], list[int]]:
    """A PGDL ``model_config`` and Keras ``input_shape`` describing a torch ``nn.Sequential``.

    Supports the standard layers :func:`build_torch` produces (``Conv2d``
    with zero padding, ``ZeroPad2d``, ``Linear``, ``BatchNorm1d/2d``,
    ``MaxPool2d``/``AvgPool2d`` without padding, ``AdaptiveAvgPool2d(1)`` or
    ``AdaptiveMaxPool2d(1)`` followed by ``Flatten``, ``Flatten``,
    ``Dropout``, ``Dropout2d``, the activations, ``Identity``); activations
    right after a ``Conv2d``/``Linear`` become its ``activation`` argument,
    as the PGDL configs write them. Anything else is an :class:`InputError`
    naming the module.

    Parameters
    ----------
    module : torch.nn.Sequential
    input_shape : tuple of int
        One input, channels first: ``(C, H, W)`` or ``(d,)``.
    """
    torch = import_optional("torch", "writing a PGDL model")
    nn = torch.nn
    shape_in = tuple(int(d) for d in input_shape)
    if len(shape_in) not in (1, 3):
        raise InputError(f"`input_shape` must be (channels, height, width) or (features,); got {input_shape!r}.")
    leaves = [leaf for leaf in _leaf_modules(module, nn) if not isinstance(leaf, nn.Identity)]
    shapes = _input_shapes(torch, leaves, shape_in)
    config: list[dict[str, Any]] = []
    i = 0
    while i < len(leaves):
        leaf, shape = leaves[i], shapes[i]
        nxt = leaves[i + 1] if i + 1 < len(leaves) else None
        kind = type(leaf).__name__
        if isinstance(leaf, nn.ZeroPad2d) and isinstance(nxt, nn.Conv2d) and _conv_padding(nxt, shapes[i + 1]) == "valid":
            pads = tuple(int(p) for p in leaf.padding)
            if _same_pads(shape, nxt.kernel_size, nxt.stride, nxt.dilation) == pads:
                layer = _conv_layer(nxt, "same")
                i += 1
            else:
                layer = {"layer_name": "ZeroPadding2D", "padding": [[pads[2], pads[3]], [pads[0], pads[1]]]}
        elif isinstance(leaf, nn.ConstantPad2d) and leaf.value == -math.inf and isinstance(nxt, nn.MaxPool2d):
            left, right, top, bottom = (int(p) for p in leaf.padding)
            layer = _pool_layer(nxt, "MaxPool2d", shape, (left, right, top, bottom))
            i += 1
        elif isinstance(leaf, nn.ZeroPad2d):
            pads = tuple(int(p) for p in leaf.padding)
            layer = {"layer_name": "ZeroPadding2D", "padding": [[pads[2], pads[3]], [pads[0], pads[1]]]}
        elif isinstance(leaf, nn.Conv2d):
            padding = _conv_padding(leaf, shape)
            if padding == "explicit":
                ph, pw = leaf.padding
                config.append({"layer_name": "ZeroPadding2D", "padding": [[ph, ph], [pw, pw]]})
                padding = "valid"
            layer = _conv_layer(leaf, padding)
        elif isinstance(leaf, nn.Linear):
            layer = {"layer_name": "Dense", "units": int(leaf.out_features), "use_bias": leaf.bias is not None}
        elif isinstance(leaf, (nn.BatchNorm1d, nn.BatchNorm2d)):
            if not leaf.track_running_stats or not leaf.affine:
                raise InputError(f"`module`: {kind} without running statistics or affine parameters has no Keras equivalent here.")
            momentum = 0.99 if leaf.momentum is None else 1.0 - float(leaf.momentum)
            layer = {"layer_name": "BatchNormalization", "momentum": round(momentum, 10), "epsilon": float(leaf.eps)}
        elif isinstance(leaf, (nn.MaxPool2d, nn.AvgPool2d)):
            layer = _pool_layer(leaf, kind, shape)
        elif isinstance(leaf, (nn.AdaptiveAvgPool2d, nn.AdaptiveMaxPool2d)) and isinstance(nxt, nn.Flatten) and leaf.output_size in (1, (1, 1)):
            layer = {"layer_name": "GlobalAveragePooling2D" if isinstance(leaf, nn.AdaptiveAvgPool2d) else "GlobalMaxPooling2D"}
            i += 1
        elif isinstance(leaf, nn.Flatten):
            if leaf.start_dim != 1 or leaf.end_dim != -1:
                raise InputError("`module`: a Flatten must flatten every axis after the batch axis.")
            layer = {"layer_name": "Flatten"}
        elif isinstance(leaf, (nn.Dropout, nn.Dropout2d)):
            layer = {"layer_name": "SpatialDropout2D" if isinstance(leaf, nn.Dropout2d) else "Dropout", "rate": float(leaf.p)}
        elif _activation_name(leaf, nn) is not None:
            layer = {"layer_name": "Activation", "activation": _activation_name(leaf, nn)}
        else:
            raise InputError(f"`module`: layer {i} is a {kind}, which fitaudit cannot express as a Keras layer config.")
        if layer["layer_name"] in ("Conv2D", "Dense") and i + 1 < len(leaves) and _activation_name(leaves[i + 1], nn):
            layer["activation"] = _activation_name(leaves[i + 1], nn)
            i += 1
        config.append(layer)
        i += 1
    keras_shape = [shape_in[1], shape_in[2], shape_in[0]] if len(shape_in) == 3 else [shape_in[0]]
    return config, keras_shape


def _activation_name(leaf: Any, nn: Any) -> str | None:
    name = type(leaf).__name__
    if name == "Softmax" and leaf.dim not in (1, -1):
        return None
    if isinstance(leaf, nn.ReLU) or name in ACTIVATION_NAMES:
        return ACTIVATION_NAMES.get(name, "relu")
    return None


def _same_pads(shape: tuple[int, ...], kernel: Any, stride: Any, dilation: Any) -> tuple[int, int, int, int]:
    """TensorFlow 'same' pads (left, right, top, bottom) for a channels-first input shape."""
    _, top, bottom = same_padding(shape[1], kernel[0], stride[0], dilation[0])
    _, left, right = same_padding(shape[2], kernel[1], stride[1], dilation[1])
    return left, right, top, bottom


def _conv_padding(conv: Any, shape: tuple[int, ...]) -> str:
    """'valid', 'same' (TensorFlow's, symmetric here) or 'explicit' (other zero padding)."""
    if conv.padding_mode != "zeros":
        raise InputError(f"`module`: a Conv2d with padding_mode {conv.padding_mode!r} has no Keras equivalent.")
    padding = conv.padding
    if isinstance(padding, str):
        if padding == "valid":
            return "valid"
        raise InputError("`module`: write Conv2d padding as integers (torch's padding='same' is not recorded as pads).")
    if tuple(padding) == (0, 0):
        return "valid"
    left, right, top, bottom = _same_pads(shape, conv.kernel_size, conv.stride, conv.dilation)
    if (top, bottom, left, right) == (padding[0], padding[0], padding[1], padding[1]):
        return "same"
    return "explicit"


def _conv_layer(conv: Any, padding: str) -> dict[str, Any]:
    layer: dict[str, Any] = {
        "layer_name": "Conv2D",
        "filters": int(conv.out_channels),
        "kernel_size": [int(k) for k in conv.kernel_size],
        "strides": [int(s) for s in conv.stride],
        "padding": padding,
        "use_bias": conv.bias is not None,
    }
    if tuple(conv.dilation) != (1, 1):
        layer["dilation_rate"] = [int(d) for d in conv.dilation]
    if conv.groups != 1:
        layer["groups"] = int(conv.groups)
    return layer


def _pool_layer(pool: Any, kind: str, shape: tuple[int, ...], pads: tuple[int, int, int, int] | None = None) -> dict[str, Any]:
    """A Keras pooling layer; ``pads`` (left, right, top, bottom) from a preceding -inf ConstantPad2d."""
    size = as_pair(pool.kernel_size, "`module` pool size")
    stride = as_pair(pool.stride, "`module` pool stride")
    own = as_pair(pool.padding, "`module` pool padding")
    dilation = getattr(pool, "dilation", 1)
    if pool.ceil_mode or dilation not in (1, (1, 1)) or (pads is not None and own != (0, 0)):
        raise InputError(f"`module`: a {kind} with ceil_mode or dilation has no Keras equivalent here.")
    total = pads if pads is not None else (own[1], own[1], own[0], own[0])
    if total == (0, 0, 0, 0):
        padding = "valid"
    elif total == _same_pads(shape, size, stride, (1, 1)) and getattr(pool, "count_include_pad", False) is False:
        padding = "same"
    else:
        raise InputError(f"`module`: a {kind} padded {total} is neither Keras' 'valid' nor its 'same' padding here.")
    name = "MaxPooling2D" if kind == "MaxPool2d" else "AveragePooling2D"
    return {"layer_name": name, "pool_size": list(size), "strides": list(stride), "padding": padding}


def load_state_in_order(source: Any, target: Any) -> None:
    """Copy parameters and buffers from ``source`` to ``target`` module by module, in order.

    Both must hold the same sequence of layers with state (``Conv2d``,
    ``Linear``, batch norm) with equal shapes; their positions (and so
    their state-dict keys) may differ, e.g. when a ``ZeroPad2d`` was added.
    """
    torch = import_optional("torch", "copying torch weights")
    with_state = [
        [m for m in net.modules() if not list(m.children()) and (list(m.parameters(recurse=False)) or list(m.buffers(recurse=False)))]
        for net in (source, target)
    ]
    if len(with_state[0]) != len(with_state[1]):
        raise InputError(f"`module` has {len(with_state[0])} layers with weights; its Keras form has {len(with_state[1])}.")
    with torch.no_grad():
        for a, b in zip(*with_state):
            state_a, state_b = a.state_dict(), b.state_dict()
            if type(a) is not type(b) or state_a.keys() != state_b.keys():
                raise InputError(f"`module`: its {type(a).__name__} has no matching layer in its Keras form ({type(b).__name__}).")
            for key, value in state_a.items():
                if tuple(value.shape) != tuple(state_b[key].shape):
                    raise InputError(f"`module`: {type(a).__name__}.{key} has shape {tuple(value.shape)}; expected {tuple(state_b[key].shape)}.")
                state_b[key].copy_(value)
