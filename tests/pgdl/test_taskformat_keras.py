"""PGDL models read by fitaudit give Keras' predictions.

Weights files are written by hand with h5py in Keras 2's ``save_weights``
layout; the same config and file are then read (a) by fitaudit into a
channels-first torch module, (b) by a real Keras 3 (torch backend, a
test-only dependency) built as the competition's ``model_def_to_keras_sequential``
builds it, and (c) by a plain numpy forward pass written here from the
TensorFlow definitions (channels last). All three must agree.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")
torch = pytest.importorskip("torch")

from fitaudit.models.conversion import keras_layers  # noqa: E402
from fitaudit.pgdl import keras_hdf5  # noqa: E402

# Keras 3's torch backend converts outputs with np.array(x) (numpy 2's copy-keyword warning)
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:keras.*")

VGG_LIKE = [
    {"layer_name": "Conv2D", "filters": 4, "kernel_size": [3, 3], "strides": [1, 1], "padding": "same", "activation": "relu", "kernel_regularizer": None},
    {"layer_name": "Conv2D", "filters": 6, "kernel_size": [3, 3], "strides": [2, 2], "padding": "same", "use_bias": False},
    {"layer_name": "BatchNormalization", "momentum": 0.9, "epsilon": 0.001},
    {"layer_name": "Activation", "activation": "relu"},
    {"layer_name": "MaxPooling2D", "pool_size": [2, 2]},
    {"layer_name": "Conv2D", "filters": 5, "kernel_size": [2, 2], "padding": "valid", "activation": "relu"},
    {"layer_name": "Flatten"},
    {"layer_name": "BatchNormalization"},
    {"layer_name": "Dropout", "rate": 0.5},
    {"layer_name": "Dense", "units": 7.0, "activation": "relu"},
    {"layer_name": "Dense", "units": 3},
]
VGG_INPUT = [11, 10, 3]

NIN_LIKE = [
    {"layer_name": "Conv2D", "filters": 4, "kernel_size": 3, "strides": 2, "padding": "same"},
    {"layer_name": "BatchNormalization", "epsilon": 1e-5},
    {"layer_name": "ReLU"},
    {"layer_name": "Conv2D", "filters": 4, "kernel_size": 1, "activation": "relu"},
    {"layer_name": "MaxPooling2D", "pool_size": 3, "strides": 2, "padding": "same"},
    {"layer_name": "AveragePooling2D", "pool_size": 2, "strides": 1},
    {"layer_name": "Conv2D", "filters": 3, "kernel_size": 1},
    {"layer_name": "GlobalAveragePooling2D"},
]
NIN_INPUT = [12, 12, 2]


def random_keras_weights(config, input_shape, rng):
    """Random weights for every layer, Keras shapes, from a shape walk independent of fitaudit."""
    layers, shape, counts = [], list(input_shape), {}
    for layer in config:
        cls = layer["layer_name"]
        stem = keras_layers.snake_case(cls)
        name = stem if stem not in counts else f"{stem}_{counts[stem]}"
        counts[stem] = counts.get(stem, 0) + 1
        weights = []
        if cls == "Conv2D":
            k = layer["kernel_size"]
            k = [k, k] if isinstance(k, int) else k
            s = layer.get("strides", 1)
            s = [s, s] if isinstance(s, int) else s
            weights.append(("kernel", rng.normal(0, 0.5, size=(k[0], k[1], shape[2], layer["filters"]))))
            if layer.get("use_bias", True):
                weights.append(("bias", rng.normal(0, 0.5, size=layer["filters"])))
            if layer.get("padding", "valid") == "same":
                shape = [math.ceil(shape[0] / s[0]), math.ceil(shape[1] / s[1]), layer["filters"]]
            else:
                shape = [(shape[0] - k[0]) // s[0] + 1, (shape[1] - k[1]) // s[1] + 1, layer["filters"]]
        elif cls == "Dense":
            units = int(layer["units"])
            weights += [("kernel", rng.normal(0, 0.5, size=(shape[0], units))), ("bias", rng.normal(0, 0.5, size=units))]
            shape = [units]
        elif cls == "BatchNormalization":
            c = shape[-1]
            weights += [
                ("gamma", rng.uniform(0.5, 2, c)),
                ("beta", rng.normal(0, 0.5, c)),
                ("moving_mean", rng.normal(0, 0.5, c)),
                ("moving_variance", rng.uniform(0.3, 2, c)),
            ]
        elif cls in ("MaxPooling2D", "AveragePooling2D"):
            p = layer.get("pool_size", 2)
            p = [p, p] if isinstance(p, int) else p
            s = layer.get("strides") or p
            s = [s, s] if isinstance(s, int) else s
            if layer.get("padding", "valid") == "same":
                shape = [math.ceil(shape[0] / s[0]), math.ceil(shape[1] / s[1]), shape[2]]
            else:
                shape = [(shape[0] - p[0]) // s[0] + 1, (shape[1] - p[1]) // s[1] + 1, shape[2]]
        elif cls == "Flatten":
            shape = [int(np.prod(shape))]
        elif cls == "GlobalAveragePooling2D":
            shape = [shape[2]]
        layers.append((name, [(w, np.asarray(v, np.float32)) for w, v in weights]))
    return layers


def write_keras2(path, layers):
    with h5py.File(path, "w") as f:
        f.attrs["layer_names"] = [name.encode() for name, _ in layers]
        f.attrs["backend"] = b"tensorflow"
        f.attrs["keras_version"] = b"2.4.0"
        for name, weights in layers:
            g = f.create_group(name)
            g.attrs["weight_names"] = [f"{name}/{w}:0".encode() for w, _ in weights]
            for w, value in weights:
                g.create_dataset(f"{name}/{w}:0", data=value)


# ---------------------------------------------------------------- numpy reference (channels last)
def _pad_same(x, k, s, fill=0.0):
    pads = []
    for n, kk, ss in zip(x.shape[1:3], k, s):
        out = math.ceil(n / ss)
        total = max((out - 1) * ss + kk - n, 0)
        pads.append((total // 2, total - total // 2))
    return np.pad(x, ((0, 0), pads[0], pads[1], (0, 0)), constant_values=fill)


def _windows(x, k, s):
    n, h, w, c = x.shape
    oh, ow = (h - k[0]) // s[0] + 1, (w - k[1]) // s[1] + 1
    out = np.empty((n, oh, ow, k[0], k[1], c), x.dtype)
    for i in range(k[0]):
        for j in range(k[1]):
            out[:, :, :, i, j, :] = x[:, i : i + s[0] * oh : s[0], j : j + s[1] * ow : s[1], :][:, :oh, :ow]
    return out


def numpy_forward(config, layers, x):
    weights = iter([dict(w) for _, w in layers])
    for layer in config:
        cls = layer["layer_name"]
        params = next(weights)
        pair = lambda v: [v, v] if isinstance(v, int) else list(v)  # noqa: E731
        if cls == "Conv2D":
            k, s = pair(layer["kernel_size"]), pair(layer.get("strides", 1))
            if layer.get("padding", "valid") == "same":
                x = _pad_same(x, k, s)
            x = np.einsum("nhwijc,ijcf->nhwf", _windows(x, k, s), params["kernel"]) + params.get("bias", 0.0)
            x = np.maximum(x, 0) if layer.get("activation") == "relu" else x
        elif cls == "Dense":
            x = x @ params["kernel"] + params["bias"]
            x = np.maximum(x, 0) if layer.get("activation") == "relu" else x
        elif cls == "BatchNormalization":
            eps = layer.get("epsilon", 1e-3)
            x = (x - params["moving_mean"]) / np.sqrt(params["moving_variance"] + eps) * params["gamma"] + params["beta"]
        elif cls in ("Activation", "ReLU"):
            x = np.maximum(x, 0)
        elif cls in ("MaxPooling2D", "AveragePooling2D"):
            p = pair(layer.get("pool_size", 2))
            s = pair(layer.get("strides") or p)
            if layer.get("padding", "valid") == "same":
                x = _pad_same(x, p, s, fill=-np.inf)
            win = _windows(x, p, s)
            x = win.max(axis=(3, 4)) if cls.startswith("Max") else win.mean(axis=(3, 4))
        elif cls == "Flatten":
            x = x.reshape(len(x), -1)
        elif cls == "GlobalAveragePooling2D":
            x = x.mean(axis=(1, 2))
    return x


def torch_predictions(config, input_shape, path, x_nhwc):
    net = keras_layers.build_torch(config, input_shape)
    keras_layers.assign_keras_weights(net, keras_hdf5.read_weights(path), where=str(path))
    with torch.no_grad():
        return net.module.eval()(torch.from_numpy(np.ascontiguousarray(x_nhwc.transpose(0, 3, 1, 2)))).numpy()


@pytest.mark.parametrize(("config", "input_shape"), [(VGG_LIKE, VGG_INPUT), (NIN_LIKE, NIN_INPUT)], ids=["vgg", "nin"])
def test_torch_model_matches_numpy_reference(tmp_path, config, input_shape):
    rng = np.random.default_rng(0)
    layers = random_keras_weights(config, input_shape, rng)
    write_keras2(tmp_path / "weights.hdf5", layers)
    x = rng.random((6, *input_shape)).astype(np.float32)
    # the reference consumes one weight dict per layer (empty for layers without weights)
    expected = numpy_forward(config, layers, x.astype(np.float64))
    got = torch_predictions(config, input_shape, tmp_path / "weights.hdf5", x)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("config", "input_shape"), [(VGG_LIKE, VGG_INPUT), (NIN_LIKE, NIN_INPUT)], ids=["vgg", "nin"])
def test_torch_model_matches_keras3(tmp_path, config, input_shape):
    os.environ.setdefault("KERAS_BACKEND", "torch")
    keras = pytest.importorskip("keras")
    if keras.backend.backend() != "torch":
        pytest.skip("keras runs on another backend")
    rng = np.random.default_rng(1)
    layers = random_keras_weights(config, input_shape, rng)
    write_keras2(tmp_path / "weights.hdf5", layers)

    def cast(value):  # as the competition's model_def_to_keras_sequential does
        return int(value) if isinstance(value, float) and value.is_integer() else value

    model = keras.Sequential([getattr(keras.layers, d["layer_name"])(**{k: cast(v) for k, v in d.items() if k != "layer_name"}) for d in config])
    model.build([None, *input_shape])
    model.load_weights(str(tmp_path / "weights.hdf5"))
    x = rng.random((6, *input_shape)).astype(np.float32)
    expected = keras.ops.convert_to_numpy(model(x, training=False))
    got = torch_predictions(config, input_shape, tmp_path / "weights.hdf5", x)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_written_weights_load_in_keras3(tmp_path):
    """fitaudit's writer (torch -> Keras 2 layout) is read by Keras 3 into the same function."""
    os.environ.setdefault("KERAS_BACKEND", "torch")
    keras = pytest.importorskip("keras")
    if keras.backend.backend() != "torch":
        pytest.skip("keras runs on another backend")
    from fitaudit.models.architectures import build_architecture
    from fitaudit.pgdl.task import keras_form

    torch.manual_seed(0)
    module = build_architecture({"architecture": "pgdl_nin", "kwargs": {"n_classes": 4, "in_channels": 3, "image_size": 10, "width": 6, "blocks": 2}})
    for norm in (m for m in module.modules() if isinstance(m, torch.nn.BatchNorm2d)):
        norm.running_mean.uniform_(-1, 1)
        norm.running_var.uniform_(0.5, 2)
    module.eval()
    x = np.random.default_rng(2).random((5, 3, 10, 10)).astype(np.float32)
    config, weights = keras_form(module, (3, 10, 10), check_x=x)
    keras_hdf5.write_weights(tmp_path / "weights.hdf5", weights)
    model = keras.Sequential([getattr(keras.layers, d["layer_name"])(**{k: v for k, v in d.items() if k != "layer_name"}) for d in config["model_config"]])
    model.build([None, *config["input_shape"]])
    model.load_weights(str(tmp_path / "weights.hdf5"))
    expected = keras.ops.convert_to_numpy(model(x.transpose(0, 2, 3, 1), training=False))
    with torch.no_grad():
        got = module(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("config", "input_shape"), [(VGG_LIKE, VGG_INPUT), (NIN_LIKE, NIN_INPUT)], ids=["vgg", "nin"])
def test_loaded_model_written_back_gives_the_same_config_and_weights(tmp_path, config, input_shape):
    """reader -> writer -> reader: the same layers (names and kwargs that matter) and the same weights file."""
    from fitaudit.pgdl.task import keras_form

    rng = np.random.default_rng(3)
    layers = random_keras_weights(config, input_shape, rng)
    write_keras2(tmp_path / "weights.hdf5", layers)
    net = keras_layers.build_torch(config, input_shape)
    keras_layers.assign_keras_weights(net, keras_hdf5.read_weights(tmp_path / "weights.hdf5"), where="w")
    x = rng.random((4, *input_shape)).astype(np.float32).transpose(0, 3, 1, 2)
    written, weights = keras_form(net.module, net.input_shape, check_x=x)
    assert written["input_shape"] == list(input_shape)
    assert [d["layer_name"] for d in written["model_config"]] == [
        {"ReLU": "Activation"}.get(d["layer_name"], d["layer_name"]) for d in config
    ]
    for original, again in zip(config, written["model_config"]):
        for key in ("filters", "padding", "activation", "units", "epsilon", "rate"):
            if key in original and key in again:
                assert again[key] == original[key], key
    stored = {name: dict(w) for name, w in layers}
    for name, arrays in weights:
        for weight_name, value in arrays:
            np.testing.assert_allclose(value, stored[name][weight_name.split("/")[1].split(":")[0]], rtol=1e-6)
