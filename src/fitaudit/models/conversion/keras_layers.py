"""Keras layer configs of PGDL tasks as torch modules, and torch modules as Keras configs.

A PGDL model's ``config.json`` holds ``model_config``, a list of layer
dicts (``{"layer_name": "Conv2D", "filters": 64, "kernel_size": [3, 3],
"padding": "same", "activation": "relu"}``: a ``tf.keras.layers`` class
and its keyword arguments; the competition's ``model_def_to_keras_sequential``
turns integral floats into ints and calls the classes), and
``input_shape`` (channels last, e.g. ``[32, 32, 3]``).

:func:`build_torch` builds the same network as a torch ``nn.Sequential``
of standard layers (``Conv2d``, ``BatchNorm2d``, ``ReLU``, ``MaxPool2d``,
``Flatten``, ``Linear``, ``Dropout``, ``AdaptiveAvgPool2d`` ...) that takes
**channels-first** inputs ``(n, C, H, W)`` (vectors ``(n, d)`` as they
are), so that complexity measures walking ``model.modules()`` see ordinary
layers. Exactness with Keras/TensorFlow:

* ``padding="same"`` pads ``max((ceil(n/s) - 1) s + (k - 1) d + 1 - n, 0)``
  in total, the smaller half before (TensorFlow's rule); when the halves
  differ (a stride 2 layer on an even size) an explicit ``ZeroPad2d``
  (``ConstantPad2d(-inf)`` for max pooling) precedes the layer.
* ``Flatten`` of a channels-last activation orders features (h, w, c);
  torch's flattens (c, h, w). Instead of a permutation module, the weights
  of the layers that consume the flattened vector (the next ``Dense``, and
  a ``BatchNormalization`` in between) are permuted when loaded, so the
  torch model is made of standard layers only and computes the same
  function.
* Activations given as a ``Conv2D``/``Dense`` argument become separate
  torch layers; Keras' BatchNormalization momentum m is torch's 1 - m.

:func:`fitaudit.models.conversion.torch_to_keras.keras_config_from_torch` goes the other way for the layers the
writer needs (the zoo's architectures), and :func:`keras_weights` /
:func:`assign_keras_weights` convert weights in the Keras 2 layout
(Dense kernels (in, out), Conv2D kernels (kh, kw, in, out)).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._optional import import_optional

#: kwargs that only matter for training or naming and leave inference unchanged
_IGNORED = {
    "name", "trainable", "dtype", "input_shape", "batch_input_shape", "batch_size", "autocast",
    "kernel_initializer", "bias_initializer", "kernel_regularizer", "bias_regularizer",
    "activity_regularizer", "kernel_constraint", "bias_constraint", "beta_initializer",
    "gamma_initializer", "moving_mean_initializer", "moving_variance_initializer",
    "beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint", "seed",
    "fused", "input_dim",
}  # fmt: skip

_ACTIVATIONS: dict[str, str] = {
    "relu": "ReLU",
    "sigmoid": "Sigmoid",
    "tanh": "Tanh",
    "softmax": "Softmax",
    "elu": "ELU",
    "selu": "SELU",
    "softplus": "Softplus",
    "swish": "SiLU",
    "silu": "SiLU",
    "gelu": "GELU",
}
#: torch activation module name -> its Keras activation name (the table above inverted, silu left out)
ACTIVATION_NAMES = {torch_name: keras_name for keras_name, torch_name in _ACTIVATIONS.items() if keras_name != "silu"}


@dataclasses.dataclass
class WeightSlot:
    """A Keras layer with weights and the torch module that holds them.

    Attributes
    ----------
    index : int
        Position of the layer in ``model_config``.
    keras_class : str
        ``"Conv2D"``, ``"Dense"`` or ``"BatchNormalization"``.
    names : list of str
        Keras weight names in file order (``["kernel", "bias"]``...).
    module : torch.nn.Module
    flat_order : ndarray or None
        For a layer fed by a channels-last ``Flatten``: the Keras feature
        index of each torch feature.
    """

    index: int
    keras_class: str
    names: list[str]
    module: Any
    flat_order: np.ndarray | None = None


@dataclasses.dataclass
class KerasNet:
    """A torch network built from a Keras layer config.

    Attributes
    ----------
    module : torch.nn.Sequential
        Channels-first, in eval mode.
    slots : list of WeightSlot
        The layers with weights, in Keras order.
    layer_names : list of str
        Keras 2's default name of every layer (``conv2d``, ``conv2d_1``, ...).
    keras_input_shape : tuple of int
        As in ``config.json`` (channels last).
    """

    module: Any
    slots: list[WeightSlot]
    layer_names: list[str]
    keras_input_shape: tuple[int, ...]

    @property
    def input_shape(self) -> tuple[int, ...]:
        """Shape of one input of :attr:`module` (channels first)."""
        shape = self.keras_input_shape
        return (shape[2], shape[0], shape[1]) if len(shape) == 3 else shape


def snake_case(class_name: str) -> str:
    """Keras 2's default layer name stem (``MaxPooling2D`` -> ``max_pooling2d``, ``ReLU`` -> ``re_lu``)."""
    text = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", class_name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", text).lower()


def as_pair(value: Any, what: str) -> tuple[int, int]:
    """A kernel size or stride as (height, width): an int for both, or two ints; else an error naming ``what``."""
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return int(value[0]), int(value[1])
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value), int(value)
    raise InputError(f"{what} must be an integer or a pair of integers; got {value!r}.")


def same_padding(size: int, kernel: int, stride: int, dilation: int = 1) -> tuple[int, int, int]:
    """TensorFlow's 'same' padding: (output size, padding before, padding after)."""
    out = math.ceil(size / stride)
    total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
    return out, total // 2, total - total // 2


def _valid_size(size: int, kernel: int, stride: int, dilation: int, what: str) -> int:
    out = (size - ((kernel - 1) * dilation + 1)) // stride + 1
    if out < 1:
        raise InputError(f"{what}: a {kernel}x window does not fit an input of size {size} with padding 'valid'.")
    return out


class _Builder:
    """Walks ``model_config``, tracking the Keras (channels-last) shape."""

    def __init__(self, nn: Any, input_shape: tuple[int, ...], where: str) -> None:
        self.nn = nn
        self.shape = input_shape
        self.where = where
        self.modules: list[Any] = []
        self.slots: list[WeightSlot] = []
        self.flat_order: np.ndarray | None = None

    # ------------------------------------------------------------ helpers
    def fail(self, index: int, cls: str, message: str) -> InputError:
        return InputError(f"{self.where}: layer {index} ({cls}) {message}")

    def need_image(self, index: int, cls: str) -> tuple[int, int, int]:
        if len(self.shape) != 3:
            raise self.fail(index, cls, f"needs an image input (height, width, channels); got shape {self.shape}.")
        return self.shape[0], self.shape[1], self.shape[2]

    def need_vector(self, index: int, cls: str) -> int:
        if len(self.shape) != 1:
            raise self.fail(index, cls, f"needs a flat input (put a Flatten before it); got shape {self.shape}.")
        return self.shape[0]

    def activation(self, index: int, cls: str, name: Any) -> None:
        if name is None or name == "linear":
            return
        if not isinstance(name, str) or name not in _ACTIVATIONS:
            known = ", ".join(sorted(_ACTIVATIONS))
            raise self.fail(index, cls, f"has activation {name!r}; supported: linear, {known}.")
        layer = getattr(self.nn, _ACTIVATIONS[name])
        self.modules.append(layer(dim=1) if name == "softmax" else layer())

    def data_format(self, index: int, cls: str, kwargs: dict[str, Any]) -> None:
        if kwargs.pop("data_format", None) not in (None, "channels_last"):
            raise self.fail(index, cls, "must use data_format 'channels_last' (the PGDL tasks do).")

    def padding(self, index: int, cls: str, padding: Any, kernel: tuple[int, int], strides: tuple[int, int], dilation: tuple[int, int]) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int]]:
        """(output size, (top, bottom), (left, right)) of a window layer."""
        h, w = self.shape[0], self.shape[1]
        padding = padding.lower() if isinstance(padding, str) else padding  # Keras normalises the case
        if padding == "valid":
            what = f"{self.where}: layer {index} ({cls})"
            return (_valid_size(h, kernel[0], strides[0], dilation[0], what), _valid_size(w, kernel[1], strides[1], dilation[1], what)), (0, 0), (0, 0)
        if padding == "same":
            oh, top, bottom = same_padding(h, kernel[0], strides[0], dilation[0])
            ow, left, right = same_padding(w, kernel[1], strides[1], dilation[1])
            return (oh, ow), (top, bottom), (left, right)
        raise self.fail(index, cls, f"has padding {padding!r}; expected 'valid' or 'same'.")

    # ------------------------------------------------------------ layers
    def conv2d(self, index: int, kwargs: dict[str, Any]) -> None:
        cls = "Conv2D"
        h, w, c = self.need_image(index, cls)
        self.data_format(index, cls, kwargs)
        if "filters" not in kwargs or "kernel_size" not in kwargs:
            raise self.fail(index, cls, "needs 'filters' and 'kernel_size'.")
        filters = kwargs.pop("filters")
        if not isinstance(filters, int) or filters < 1:
            raise self.fail(index, cls, f"needs a positive integer 'filters'; got {filters!r}.")
        kernel = as_pair(kwargs.pop("kernel_size"), f"{self.where}: layer {index} ({cls}) 'kernel_size'")
        strides = as_pair(kwargs.pop("strides", 1), f"{self.where}: layer {index} ({cls}) 'strides'")
        dilation = as_pair(kwargs.pop("dilation_rate", 1), f"{self.where}: layer {index} ({cls}) 'dilation_rate'")
        groups = kwargs.pop("groups", 1)
        if not isinstance(groups, int) or groups < 1 or c % groups or filters % groups:
            raise self.fail(index, cls, f"has groups {groups!r}, which must divide its {c} input channels and {filters} filters.")
        (oh, ow), (top, bottom), (left, right) = self.padding(index, cls, kwargs.pop("padding", "valid"), kernel, strides, dilation)
        activation = kwargs.pop("activation", None)
        use_bias = bool(kwargs.pop("use_bias", True))
        self.check_rest(index, cls, kwargs)
        symmetric = top == bottom and left == right
        if not symmetric:
            self.modules.append(self.nn.ZeroPad2d((left, right, top, bottom)))
        conv = self.nn.Conv2d(c, filters, kernel, stride=strides, padding=(top, left) if symmetric else 0, dilation=dilation, groups=groups, bias=use_bias)
        self.modules.append(conv)
        self.slots.append(WeightSlot(index, cls, ["kernel", "bias"] if use_bias else ["kernel"], conv))
        self.shape = (oh, ow, filters)
        self.activation(index, cls, activation)

    def dense(self, index: int, kwargs: dict[str, Any]) -> None:
        cls = "Dense"
        d = self.need_vector(index, cls)
        units = kwargs.pop("units", None)
        if not isinstance(units, int) or units < 1:
            raise self.fail(index, cls, f"needs a positive integer 'units'; got {units!r}.")
        activation = kwargs.pop("activation", None)
        use_bias = bool(kwargs.pop("use_bias", True))
        self.check_rest(index, cls, kwargs)
        linear = self.nn.Linear(d, units, bias=use_bias)
        self.modules.append(linear)
        self.slots.append(WeightSlot(index, cls, ["kernel", "bias"] if use_bias else ["kernel"], linear, self.flat_order))
        self.flat_order = None
        self.shape = (units,)
        self.activation(index, cls, activation)

    def batch_norm(self, index: int, kwargs: dict[str, Any]) -> None:
        cls = "BatchNormalization"
        axis = kwargs.pop("axis", -1)
        if isinstance(axis, list) and len(axis) == 1:
            axis = axis[0]
        if axis not in (-1, len(self.shape)):
            raise self.fail(index, cls, f"normalises axis {axis!r}; only the channel axis (-1) is supported.")
        momentum = float(kwargs.pop("momentum", 0.99))
        epsilon = float(kwargs.pop("epsilon", 1e-3))
        center, scale = bool(kwargs.pop("center", True)), bool(kwargs.pop("scale", True))
        for option, default in (("renorm", False), ("virtual_batch_size", None), ("adjustment", None), ("synchronized", False)):
            if kwargs.pop(option, default) != default:
                raise self.fail(index, cls, f"uses {option!r}, which is not supported.")
        self.check_rest(index, cls, kwargs)
        channels = self.shape[-1]
        norm_cls = self.nn.BatchNorm2d if len(self.shape) == 3 else self.nn.BatchNorm1d
        norm = norm_cls(channels, eps=epsilon, momentum=round(1.0 - momentum, 10))
        if not scale:
            norm.weight.requires_grad_(False)
        if not center:
            norm.bias.requires_grad_(False)
        names = (["gamma"] if scale else []) + (["beta"] if center else []) + ["moving_mean", "moving_variance"]
        self.modules.append(norm)
        self.slots.append(WeightSlot(index, cls, names, norm, self.flat_order))

    def pool(self, index: int, cls: str, kwargs: dict[str, Any]) -> None:
        self.need_image(index, cls)
        self.data_format(index, cls, kwargs)
        size = as_pair(kwargs.pop("pool_size", 2), f"{self.where}: layer {index} ({cls}) 'pool_size'")
        strides_arg = kwargs.pop("strides", None)
        strides = size if strides_arg is None else as_pair(strides_arg, f"{self.where}: layer {index} ({cls}) 'strides'")
        (oh, ow), (top, bottom), (left, right) = self.padding(index, cls, kwargs.pop("padding", "valid"), size, strides, (1, 1))
        self.check_rest(index, cls, kwargs)
        is_max = cls.startswith("Max")
        symmetric = top == bottom and left == right and top <= size[0] // 2 and left <= size[1] // 2
        if is_max:
            if not symmetric:
                self.modules.append(self.nn.ConstantPad2d((left, right, top, bottom), -math.inf))
            self.modules.append(self.nn.MaxPool2d(size, strides, padding=(top, left) if symmetric else 0))
        else:
            if not symmetric:
                raise self.fail(index, cls, "needs asymmetric 'same' padding at this input size, which is not supported.")
            self.modules.append(self.nn.AvgPool2d(size, strides, padding=(top, left), count_include_pad=False))
        self.shape = (oh, ow, self.shape[2])

    def global_pool(self, index: int, cls: str, kwargs: dict[str, Any]) -> None:
        self.need_image(index, cls)
        self.data_format(index, cls, kwargs)
        if kwargs.pop("keepdims", False):
            raise self.fail(index, cls, "uses keepdims=True, which is not supported.")
        self.check_rest(index, cls, kwargs)
        pool = self.nn.AdaptiveMaxPool2d(1) if "Max" in cls else self.nn.AdaptiveAvgPool2d(1)
        self.modules += [pool, self.nn.Flatten()]
        self.shape = (self.shape[2],)

    def flatten(self, index: int, kwargs: dict[str, Any]) -> None:
        self.data_format(index, "Flatten", kwargs)
        self.check_rest(index, "Flatten", kwargs)
        self.modules.append(self.nn.Flatten())
        if len(self.shape) == 3:
            h, w, c = self.shape
            order = ((np.arange(h)[None, :, None] * w + np.arange(w)[None, None, :]) * c + np.arange(c)[:, None, None]).ravel()
            self.flat_order = None if h * w == 1 else order
            self.shape = (h * w * c,)
        elif len(self.shape) != 1:
            raise self.fail(index, "Flatten", f"got an input of shape {self.shape}.")

    def dropout(self, index: int, cls: str, kwargs: dict[str, Any]) -> None:
        rate = kwargs.pop("rate", None)
        if not isinstance(rate, (int, float)) or not 0 <= rate < 1:
            raise self.fail(index, cls, f"needs a 'rate' in [0, 1); got {rate!r}.")
        if kwargs.pop("noise_shape", None) is not None:
            raise self.fail(index, cls, "uses 'noise_shape', which is not supported.")
        if cls == "SpatialDropout2D":
            self.need_image(index, cls)
            self.data_format(index, cls, kwargs)
        self.check_rest(index, cls, kwargs)
        self.modules.append((self.nn.Dropout2d if cls == "SpatialDropout2D" else self.nn.Dropout)(float(rate)))

    def relu(self, index: int, kwargs: dict[str, Any]) -> None:
        max_value = kwargs.pop("max_value", None)
        slope = float(kwargs.pop("negative_slope", 0.0))
        if float(kwargs.pop("threshold", 0.0)) != 0.0:
            raise self.fail(index, "ReLU", "uses a non-zero 'threshold', which is not supported.")
        self.check_rest(index, "ReLU", kwargs)
        if max_value is not None and slope == 0.0:
            self.modules.append(self.nn.Hardtanh(0.0, float(max_value)))
        elif max_value is None:
            self.modules.append(self.nn.LeakyReLU(slope) if slope else self.nn.ReLU())
        else:
            raise self.fail(index, "ReLU", "combines 'max_value' with 'negative_slope', which is not supported.")

    def leaky_relu(self, index: int, kwargs: dict[str, Any]) -> None:
        slope = float(kwargs.pop("negative_slope", kwargs.pop("alpha", 0.3)))
        self.check_rest(index, "LeakyReLU", kwargs)
        self.modules.append(self.nn.LeakyReLU(slope))

    def softmax(self, index: int, kwargs: dict[str, Any]) -> None:
        if kwargs.pop("axis", -1) not in (-1, len(self.shape)):
            raise self.fail(index, "Softmax", "must act on the last axis.")
        self.check_rest(index, "Softmax", kwargs)
        self.modules.append(self.nn.Softmax(dim=1))

    def zero_padding(self, index: int, kwargs: dict[str, Any]) -> None:
        self.need_image(index, "ZeroPadding2D")
        self.data_format(index, "ZeroPadding2D", kwargs)
        padding = kwargs.pop("padding", 1)
        self.check_rest(index, "ZeroPadding2D", kwargs)
        what = f"{self.where}: layer {index} (ZeroPadding2D) 'padding'"
        if isinstance(padding, (list, tuple)) and len(padding) == 2 and all(isinstance(p, (list, tuple)) for p in padding):
            (top, bottom), (left, right) = as_pair(padding[0], what), as_pair(padding[1], what)
        else:
            (top, left) = as_pair(padding, what)
            bottom, right = top, left
        self.modules.append(self.nn.ZeroPad2d((left, right, top, bottom)))
        h, w, c = self.shape
        self.shape = (h + top + bottom, w + left + right, c)

    def check_rest(self, index: int, cls: str, kwargs: dict[str, Any]) -> None:
        unknown = sorted(set(kwargs) - _IGNORED)
        if unknown:
            raise self.fail(index, cls, f"has arguments fitaudit does not support: {', '.join(unknown)}.")


def _handlers(builder: _Builder) -> dict[str, Callable[[int, dict[str, Any]], None]]:
    def named(method: Callable[[int, str, dict[str, Any]], None], cls: str) -> Callable[[int, dict[str, Any]], None]:
        return lambda index, kwargs: method(index, cls, kwargs)

    def activation(index: int, kwargs: dict[str, Any]) -> None:
        name = kwargs.pop("activation", None)
        builder.check_rest(index, "Activation", kwargs)
        builder.activation(index, "Activation", name)

    def nothing(index: int, kwargs: dict[str, Any]) -> None:
        kwargs.pop("input_shape", None)
        kwargs.pop("batch_input_shape", None)
        kwargs.pop("shape", None)
        builder.check_rest(index, "InputLayer", kwargs)

    return {
        "Conv2D": builder.conv2d,
        "Convolution2D": builder.conv2d,
        "Dense": builder.dense,
        "BatchNormalization": builder.batch_norm,
        "MaxPooling2D": named(builder.pool, "MaxPooling2D"),
        "MaxPool2D": named(builder.pool, "MaxPooling2D"),
        "AveragePooling2D": named(builder.pool, "AveragePooling2D"),
        "AvgPool2D": named(builder.pool, "AveragePooling2D"),
        "GlobalAveragePooling2D": named(builder.global_pool, "GlobalAveragePooling2D"),
        "GlobalAvgPool2D": named(builder.global_pool, "GlobalAveragePooling2D"),
        "GlobalMaxPooling2D": named(builder.global_pool, "GlobalMaxPooling2D"),
        "GlobalMaxPool2D": named(builder.global_pool, "GlobalMaxPooling2D"),
        "Flatten": builder.flatten,
        "Dropout": named(builder.dropout, "Dropout"),
        "SpatialDropout2D": named(builder.dropout, "SpatialDropout2D"),
        "Activation": activation,
        "ReLU": builder.relu,
        "LeakyReLU": builder.leaky_relu,
        "Softmax": builder.softmax,
        "ZeroPadding2D": builder.zero_padding,
        "InputLayer": nothing,
    }


#: the tf.keras.layers classes :func:`build_torch` understands
SUPPORTED_LAYERS = (
    "Activation", "AveragePooling2D", "AvgPool2D", "BatchNormalization", "Conv2D", "Convolution2D",
    "Dense", "Dropout", "Flatten", "GlobalAveragePooling2D", "GlobalAvgPool2D", "GlobalMaxPool2D",
    "GlobalMaxPooling2D", "InputLayer", "LeakyReLU", "MaxPool2D", "MaxPooling2D", "ReLU", "Softmax",
    "SpatialDropout2D", "ZeroPadding2D",
)  # fmt: skip


def _integral(value: Any) -> Any:
    """As the competition's loader: a float with an integral value becomes an int."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def check_input_shape(input_shape: Any, where: str) -> tuple[int, ...]:
    """A Keras input shape (channels last, no batch axis) as a tuple of positive ints."""
    if not isinstance(input_shape, (list, tuple)) or len(input_shape) not in (1, 3):
        raise InputError(f"{where}: 'input_shape' must be [height, width, channels] or [features]; got {input_shape!r}.")
    shape = tuple(_integral(d) for d in input_shape)
    if not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape):
        raise InputError(f"{where}: 'input_shape' must hold positive integers; got {input_shape!r}.")
    return shape


def build_torch(model_config: Any, input_shape: Any, *, where: str = "config") -> KerasNet:
    """Build the torch network a PGDL ``model_config`` describes (weights untrained).

    Parameters
    ----------
    model_config : list of dict
        Layer dicts with ``layer_name`` (a ``tf.keras.layers`` class name,
        one of :data:`SUPPORTED_LAYERS`) and its keyword arguments.
    input_shape : list of int
        Keras input shape (channels last), as in ``config.json``.
    where : str
        Names the file in error messages.

    Returns
    -------
    KerasNet
        The channels-first torch module (eval mode) and the map from Keras
        layers with weights to torch modules.
    """
    torch = import_optional("torch", "loading a PGDL model")
    shape = check_input_shape(input_shape, where)
    if not isinstance(model_config, list) or not model_config:
        raise InputError(f"{where}: 'model_config' must be a non-empty list of layer dicts; got {type(model_config).__name__}.")
    builder = _Builder(torch.nn, shape, where)
    handlers = _handlers(builder)
    names: list[str] = []
    counts: dict[str, int] = {}
    for index, layer in enumerate(model_config):
        if not isinstance(layer, dict) or not isinstance(layer.get("layer_name"), str):
            raise InputError(f"{where}: layer {index} must be a dict with a string 'layer_name'; got {layer!r}.")
        cls = layer["layer_name"]
        if cls not in handlers:
            raise InputError(
                f"{where}: layer {index} has layer_name {cls!r}, a layer type fitaudit cannot load; "
                f"supported: {', '.join(SUPPORTED_LAYERS)}."
            )
        kwargs = {key: _integral(value) for key, value in layer.items() if key != "layer_name"}
        stem = snake_case(cls)
        count = counts.get(stem, 0)
        counts[stem] = count + 1
        names.append(str(kwargs.get("name") or (stem if count == 0 else f"{stem}_{count}")))
        handlers[cls](index, kwargs)
    module = torch.nn.Sequential(*builder.modules).eval()
    return KerasNet(module=module, slots=builder.slots, layer_names=names, keras_input_shape=shape)


# ------------------------------------------------------------------ weights
def assign_keras_weights(net: KerasNet, layers: list[tuple[str, list[tuple[str, np.ndarray]]]], *, where: str) -> None:
    """Load Keras-layout weights (:func:`fitaudit.pgdl.keras_hdf5.read_weights`) into ``net``.

    As Keras 2 does for an HDF5 file, by order: the i-th layer with weights
    in the file goes to the i-th layer with weights in the config; shapes
    are checked.
    """
    torch = import_optional("torch", "loading a PGDL model")
    if len(layers) != len(net.slots):
        raise InputError(
            f"{where} holds weights for {len(layers)} layers; the model config has "
            f"{len(net.slots)} layers with weights."
        )
    for slot, (layer_name, weights) in zip(net.slots, layers):
        if len(weights) != len(slot.names):
            raise InputError(
                f"{where}: layer {layer_name!r} has {len(weights)} weights; config layer {slot.index} "
                f"({slot.keras_class}) needs {len(slot.names)} ({', '.join(slot.names)})."
            )
        arrays = {name: np.asarray(array, dtype=np.float32) for name, (_, array) in zip(slot.names, weights)}
        tensors = _to_torch(slot, arrays)
        with torch.no_grad():
            for attribute, value in tensors.items():
                target = getattr(slot.module, attribute)
                if tuple(target.shape) != tuple(value.shape):
                    stored = dict(zip(slot.names, weights))
                    raise InputError(
                        f"{where}: layer {layer_name!r} weight {_keras_name(slot, attribute)!r} has shape "
                        f"{_stored_shape(stored, slot, attribute)}; config layer {slot.index} "
                        f"({slot.keras_class}) needs {_keras_shape(slot, tuple(target.shape))}."
                    )
                target.copy_(torch.from_numpy(np.ascontiguousarray(value)))


_TORCH_OF_KERAS = {
    "kernel": "weight", "bias": "bias", "gamma": "weight", "beta": "bias",
    "moving_mean": "running_mean", "moving_variance": "running_var",
}  # fmt: skip


def _keras_name(slot: WeightSlot, attribute: str) -> str:
    return next(n for n in slot.names if _TORCH_OF_KERAS[n] == attribute)


def _stored_shape(stored: dict[str, tuple[str, np.ndarray]], slot: WeightSlot, attribute: str) -> tuple[int, ...]:
    return tuple(np.shape(stored[_keras_name(slot, attribute)][1]))


def _keras_shape(slot: WeightSlot, torch_shape: tuple[int, ...]) -> tuple[int, ...]:
    if slot.keras_class == "Conv2D" and len(torch_shape) == 4:
        return (torch_shape[2], torch_shape[3], torch_shape[1], torch_shape[0])
    if slot.keras_class == "Dense" and len(torch_shape) == 2:
        return (torch_shape[1], torch_shape[0])
    return torch_shape


def _to_torch(slot: WeightSlot, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for name, array in arrays.items():
        value = array
        if name == "kernel" and slot.keras_class == "Conv2D":
            if value.ndim != 4:
                value = value.reshape((-1,))  # the shape check reports it
            else:
                value = value.transpose(3, 2, 0, 1)
        elif name == "kernel":
            if value.ndim == 2 and slot.flat_order is not None and value.shape[0] == len(slot.flat_order):
                value = value[slot.flat_order, :]
            value = value.T
        elif slot.flat_order is not None and slot.keras_class == "BatchNormalization" and value.shape == slot.flat_order.shape:
            value = value[slot.flat_order]
        out[_TORCH_OF_KERAS[name]] = value
    return out


def keras_weights(net: KerasNet) -> list[tuple[str, list[tuple[str, np.ndarray]]]]:
    """The weights of ``net`` in the Keras 2 layout: every layer, in order, with named arrays."""
    by_index = {slot.index: slot for slot in net.slots}
    layers: list[tuple[str, list[tuple[str, np.ndarray]]]] = []
    for index, layer_name in enumerate(net.layer_names):
        slot = by_index.get(index)
        weights: list[tuple[str, np.ndarray]] = []
        if slot is not None:
            for name in slot.names:
                value = getattr(slot.module, _TORCH_OF_KERAS[name]).detach().cpu().numpy().astype(np.float32)
                if name == "kernel" and slot.keras_class == "Conv2D":
                    value = value.transpose(2, 3, 1, 0)
                elif name == "kernel":
                    value = value.T
                    if slot.flat_order is not None:
                        value = _unpermute(value, slot.flat_order)
                elif slot.flat_order is not None and slot.keras_class == "BatchNormalization":
                    value = _unpermute(value, slot.flat_order)
                weights.append((f"{layer_name}/{name}:0", np.ascontiguousarray(value)))
        layers.append((layer_name, weights))
    return layers


def _unpermute(value: np.ndarray, order: np.ndarray) -> np.ndarray:
    out = np.empty_like(value)
    out[order] = value
    return out
