"""Every command that takes `--images`, with a channels-last Keras model and an NHWC ONNX model (issue 46 item 5).

Each must put the pipeline's channels-first images into the model's own
layout on every path that runs it (host arrays and the device path alike),
and finish.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from class_images import write_class_folders
from test_image_layouts import GreyNet

from fitaudit.cli import main

os.environ.setdefault("KERAS_BACKEND", "torch")
torch = pytest.importorskip("torch")

CLASSES = ["a", "b", "c"]


def keras_model(path):
    keras = pytest.importorskip("keras")
    if keras.backend.backend() != "torch":
        pytest.skip("keras was imported on another backend")
    model = keras.Sequential([
        keras.Input((16, 16, 3)), keras.layers.Conv2D(4, 3), keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(3, activation="softmax"),
    ])
    rng = np.random.default_rng(0)
    model.layers[0].set_weights([rng.normal(0, 0.01, (3, 3, 3, 4)) + 1.0 / 27, np.full(4, 2.0)])
    model.layers[2].set_weights([np.array([[-0.5, 0.0, 0.5]] * 4), np.array([4.0, 0.0, -5.0])])
    model.save(path)
    return path


def onnx_model(path):
    pytest.importorskip("onnxruntime")
    from fitaudit.models import export_onnx

    torch.manual_seed(1)
    return export_onnx(GreyNet(3, channels_last=True).eval(), path, input_shape=(16, 16, 3),
                       metadata={"classes": CLASSES})


COMMANDS = {
    "inspect": lambda m, f, out: ["inspect", "--model", m, "--images", f, "--resize", "22"],
    "examine": lambda m, f, out: ["examine", "--model", m, "--images", f, "--classes", ",".join(CLASSES),
                                  "--examiner", "random", "--steps", "1", "--instances", "2", "--out", out],
    "audit": lambda m, f, out: ["audit", "--model", m, "--images", f, "--classes", ",".join(CLASSES),
                                "--instruments", "overfit", "--resize", "22", "--out", out],
    "overfit": lambda m, f, out: ["overfit", "--model", m, "--images", f, "--classes", ",".join(CLASSES),
                                  "--resize", "22"],
    "leakage": lambda m, f, out: ["leakage", "--model", m, "--images", f, "--train-images", f, "--resize", "16",
                                  "--crop", "16", "--checkpoint-dir", out],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("build", [keras_model, onnx_model], ids=["keras_channels_last", "onnx_nhwc"])
@pytest.mark.slow
def test_every_images_command_runs_a_channels_last_model(build, command, tmp_path, capsys):
    model = build(tmp_path / ("net.keras" if build is keras_model else "net.onnx"))
    folder = write_class_folders(tmp_path / "images", CLASSES, seed=3)
    argv = [str(a) for a in COMMANDS[command](model, folder, tmp_path / "out")]
    code = main([*argv, "--quiet"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "expected shape" not in err and "the torch model failed" not in err


def test_a_failing_keras_model_is_named_keras_not_torch(tmp_path):
    from fitaudit._errors import InputError
    from fitaudit.models import load_model

    adapter = load_model(keras_model(tmp_path / "net.keras"))
    with pytest.raises(InputError, match="the Keras model failed on a batch of shape"):
        adapter.logits_tensor(torch.zeros((2, 5, 9, 9)))
