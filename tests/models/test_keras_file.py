"""Keras 3 .keras files: loaded safely on the torch backend, channels last, the accuracy keras itself computes."""

from __future__ import annotations

import json
import os
import zipfile

import numpy as np
import pytest
from class_images import write_class_folders

import fitaudit
from fitaudit._errors import InputError
from fitaudit.cli import main
from fitaudit.data.images import open_images
from fitaudit.models import load_model
from fitaudit.models.io import read_model_metadata, runs_code
from fitaudit.models.layout import CHANNELS_LAST
from fitaudit.options import RunOptions

os.environ.setdefault("KERAS_BACKEND", "torch")
keras = pytest.importorskip("keras")
torch = pytest.importorskip("torch")
Image = pytest.importorskip("PIL.Image")
if keras.backend.backend() != "torch":
    pytest.skip("keras was imported on another backend", allow_module_level=True)

CLASSES = ["a", "b", "c"]


def write_folder(root, seed):
    return write_class_folders(root, CLASSES, seed=seed)


def build(channels, path):
    """A small channels-last CNN ending in a softmax, weights set so dark, middle and bright images differ."""
    model = keras.Sequential([
        keras.Input((16, 16, channels)), keras.layers.Conv2D(4, 3), keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(3, activation="softmax"),
    ])
    conv, dense = model.layers[0], model.layers[2]
    rng = np.random.default_rng(0)
    conv.set_weights([rng.normal(0, 0.01, (3, 3, channels, 4)) + 1.0 / (9 * channels), np.full(4, 2.0)])
    dense.set_weights([np.array([[-0.5, 0.0, 0.5]] * 4), np.array([4.0, 0.0, -5.0])])
    model.save(path)
    return model


def reference(folder, grey):
    """Resize 22, centre crop 16, [0, 1], channels last, by hand."""
    data = open_images(folder, classes=CLASSES)
    images = []
    for path in data.paths:
        image = Image.open(path).convert("L" if grey else "RGB")
        width, height = image.size
        size = (22, int(22 * height / width)) if width <= height else (int(22 * width / height), 22)
        image = image.resize(size, Image.BILINEAR)
        top, left = int(round((size[1] - 16) / 2.0)), int(round((size[0] - 16) / 2.0))
        pixels = np.asarray(image.crop((left, top, left + 16, top + 16)), dtype=np.float32) / 255.0
        images.append(pixels[..., None] if grey else pixels)
    return np.stack(images), data.labels


@pytest.mark.parametrize("channels", [3, 1])
@pytest.mark.slow
def test_keras_file_inspect_and_audit(channels, tmp_path, capsys):
    path = tmp_path / "net.keras"
    model = build(channels, path)
    folder = write_folder(tmp_path / "images", channels)
    x, y = reference(folder, grey=channels == 1)
    predicted = model.predict(x, verbose=0).argmax(axis=1)
    assert len(set(predicted.tolist())) > 1
    truth = float(np.mean(predicted == y))
    assert read_model_metadata(path).input_shape == (16, 16, channels) and not runs_code(path)
    adapter = load_model(path)
    assert adapter.image_layout == CHANNELS_LAST and adapter.n_classes == 3
    # scores are log-probabilities: their softmax is keras's output
    np.testing.assert_allclose(adapter.predict_proba(x), model.predict(x, verbose=0), atol=1e-5)
    argv = ["inspect", "--model", str(path), "--images", str(folder), "--resize", "22", "--json", "--quiet"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["accuracy"] == pytest.approx(truth)
    result = fitaudit.audit(path, images=folder, pipeline={"resize": 22, "crop": 16}, instruments=["overfit"],
                            options=RunOptions(progress=False))
    assert result.subject["accuracy"] == pytest.approx(truth)


def test_objects_from_outside_keras_are_refused(tmp_path):
    path = tmp_path / "net.keras"
    build(3, path)
    with zipfile.ZipFile(path) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    config = json.loads(files["config.json"])
    config["config"]["layers"][1]["module"] = "os"
    files["config.json"] = json.dumps(config).encode()
    evil = tmp_path / "evil.keras"
    with zipfile.ZipFile(evil, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    assert runs_code(evil)
    with pytest.raises(InputError, match=r"names objects from outside keras \(os.Conv2D\).*--trust-code"):
        load_model(evil)
    (tmp_path / "bad.keras").write_bytes(b"not a zip")
    with pytest.raises(InputError, match="is not a Keras 3 .keras file"):
        load_model(tmp_path / "bad.keras")
