"""Grey, channels-last and flat image models on image folders: inspect and audit give the accuracy computed by hand.

Each reference decodes the files with plain Pillow calls (grey by
``convert("L")``), resizes and crops by hand, and runs the native model
(torch module, onnxruntime session, scikit-learn estimator) itself on the
layout it was built for.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from class_images import write_class_folders

import fitaudit
from fitaudit._errors import InputError
from fitaudit.cli import main
from fitaudit.data.images import open_images
from fitaudit.data.pipeline import EvalPipeline
from fitaudit.models import load_model
from fitaudit.models.layout import (
    CHANNELS_FIRST,
    CHANNELS_LAST,
    FLAT,
    NO_CHANNEL_AXIS,
    InputSpec,
    input_spec,
)
from fitaudit.options import RunOptions

#: this module's audits run without progress bars
QUIET = RunOptions(progress=False)

torch = pytest.importorskip("torch")
Image = pytest.importorskip("PIL.Image")
CLASSES = ["a", "b", "c"]


def write_folder(root, seed):
    return write_class_folders(root, CLASSES, seed=seed)


def reference_batch(folder, resize, crop, mean, std, *, grey):
    """Every image of ``folder`` through resize / centre crop / normalise by hand, channels first, and the labels."""
    data = open_images(folder, classes=CLASSES)
    images = []
    for path in data.paths:
        image = Image.open(path).convert("L" if grey else "RGB")
        width, height = image.size
        size = (resize, int(resize * height / width)) if width <= height else (int(resize * width / height), resize)
        image = image.resize(size, Image.BILINEAR)
        top, left = int(round((size[1] - crop) / 2.0)), int(round((size[0] - crop) / 2.0))
        pixels = np.asarray(image.crop((left, top, left + crop, top + crop)), dtype=np.float32) / 255.0
        pixels = pixels[None] if grey else pixels.transpose(2, 0, 1)
        images.append((pixels - np.float32(mean)[:, None, None]) / np.float32(std)[:, None, None])
    return np.stack(images).astype(np.float32), data.labels


def cli_accuracy(capsys, *argv):
    assert main(["inspect", *map(str, argv), "--json", "--quiet"]) == 0
    return json.loads(capsys.readouterr().out)["accuracy"]


def audit_accuracy(model, folder, tmp_path, **options):
    result = fitaudit.audit(model, images=folder, instruments=["overfit"], options=QUIET,
                            **options)
    return result.subject["accuracy"]


class GreyNet(torch.nn.Module):
    """A small grey CNN; ``channels_last`` takes (n, H, W, c) batches, as a Keras export does."""

    def __init__(self, channels=1, channels_last=False):
        super().__init__()
        self.channels_last = channels_last
        self.conv = torch.nn.Conv2d(channels, 4, 3)
        self.head = torch.nn.Linear(4, 3)
        with torch.no_grad():  # features near the mean brightness + 2; dark, middle and bright images score a, b, c
            self.conv.weight.mul_(0.1).add_(1.0 / (9 * channels))
            self.conv.bias.fill_(2.0)
            self.head.weight.copy_(torch.tensor([[-0.5] * 4, [0.0] * 4, [0.5] * 4]))
            self.head.bias.copy_(torch.tensor([4.0, 0.0, -5.0]))

    def forward(self, x):
        if self.channels_last:
            x = x.permute(0, 3, 1, 2)
        return self.head(torch.relu(self.conv(x)).mean(dim=(2, 3)))


def test_input_spec_reads_layouts():
    assert input_spec((1, 28, 28)) == InputSpec(CHANNELS_FIRST, 1, 28)
    assert input_spec((None, None, 3)) == InputSpec(CHANNELS_LAST, 3, None)
    assert input_spec((3, None, None)) == InputSpec(CHANNELS_FIRST, 3, None)
    assert input_spec((784,)) == InputSpec(FLAT, 1, 28) and input_spec((3 * 32 * 32,)) == InputSpec(FLAT, 3, 32)
    assert input_spec((28, 28)) == InputSpec(NO_CHANNEL_AXIS, 1, 28)
    assert input_spec((10,)) == InputSpec(FLAT) and input_spec((5, 7, 9)) == InputSpec() and input_spec(None) == InputSpec()


def test_a_built_in_architecture_declares_its_input_without_drawing_weights(tmp_path):
    """Reading a config without ``input_shape`` gives its first layer's input and leaves torch's generator alone."""
    from fitaudit.models.io import read_model_metadata

    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"architecture": "resnet18",
                                                    "kwargs": {"n_classes": 3, "in_channels": 1, "width": 8}}))
    (folder / "weights.safetensors").write_bytes(b"")  # read_model_metadata reads the config only
    torch.manual_seed(0)
    expected = torch.rand(4)
    torch.manual_seed(0)
    assert read_model_metadata(folder).input_shape == (1, None, None)
    assert read_model_metadata(folder).spec == InputSpec(CHANNELS_FIRST, 1, None)
    torch.testing.assert_close(torch.rand(4), expected)


@pytest.mark.slow
def test_grey_torch_cnn_on_a_colour_folder(tmp_path, capsys):
    from fitaudit.models import save_torch_model
    from fitaudit.models.architectures import build_architecture

    config = {"architecture": "resnet18", "kwargs": {"n_classes": 3, "in_channels": 1, "width": 8},
              "classes": CLASSES, "pipeline": {"resize": 22, "crop": 16, "mean": [0.5], "std": [0.25]}}
    torch.manual_seed(0)
    module = build_architecture(config)
    model = save_torch_model(module, config, tmp_path / "model")
    folder = write_folder(tmp_path / "test", 1)
    x, y = reference_batch(folder, 22, 16, [0.5], [0.25], grey=True)
    with torch.no_grad():
        expected = module.eval()(torch.from_numpy(x)).numpy().argmax(axis=1)
    assert len(set(expected.tolist())) > 1  # the predictions vary: a wrong pipeline would change them
    truth = float(np.mean(expected == y))
    assert cli_accuracy(capsys, "--model", model, "--images", folder) == pytest.approx(truth)
    assert audit_accuracy(model, folder, tmp_path) == pytest.approx(truth)
    pipeline = EvalPipeline.from_dict(config["pipeline"])
    assert pipeline.n_channels == 1
    inputs = open_images(folder, classes=CLASSES).arrays(pipeline)[0]
    np.testing.assert_allclose(inputs, x, atol=1e-5)
    np.testing.assert_array_equal(load_model(model).predict(inputs), expected)


def export(module, path, shape, metadata):
    from fitaudit.models import export_onnx

    return export_onnx(module, path, input_shape=shape, metadata=metadata)


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.slow
def test_onnx_grey_and_channels_last_on_a_folder(tmp_path, capsys, channels_last):
    ort = pytest.importorskip("onnxruntime")
    channels = 3 if channels_last else 1
    torch.manual_seed(1)
    module = GreyNet(channels, channels_last).eval()
    mean, std = ([0.4, 0.5, 0.6], [0.2, 0.25, 0.3]) if channels_last else ([0.45], [0.2])
    shape = (16, 16, channels) if channels_last else (channels, 16, 16)
    model = export(module, tmp_path / "net.onnx", shape,
                   {"classes": CLASSES, "pipeline": {"resize": 22, "crop": 16, "mean": mean, "std": std}})
    folder = write_folder(tmp_path / "test", 2)
    x, y = reference_batch(folder, 22, 16, mean, std, grey=not channels_last)
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    fed = x.transpose(0, 2, 3, 1).copy() if channels_last else x
    expected = session.run(None, {session.get_inputs()[0].name: fed})[0].argmax(axis=1)
    assert len(set(expected.tolist())) > 1
    truth = float(np.mean(expected == y))
    assert cli_accuracy(capsys, "--model", model, "--images", folder) == pytest.approx(truth)
    assert audit_accuracy(model, folder, tmp_path) == pytest.approx(truth)
    adapter = load_model(model)
    assert adapter.image_layout == (CHANNELS_LAST if channels_last else None)
    np.testing.assert_array_equal(adapter.predict(x), expected)  # channels-first batches put in the model's layout
    np.testing.assert_array_equal(adapter.predict(fed), expected)  # and batches already in it kept


class NoChannelAxis(GreyNet):
    """A grey CNN taking (n, H, W) batches, as a Keras Input((H, W)) model does."""

    def forward(self, x):
        return super().forward(x[:, None])


@pytest.mark.slow
def test_onnx_without_a_channel_axis_gets_grey_images(tmp_path, capsys):
    ort = pytest.importorskip("onnxruntime")
    torch.manual_seed(2)
    module = NoChannelAxis().eval()
    model = export(module, tmp_path / "net.onnx", (16, 16),
                   {"classes": CLASSES, "pipeline": {"resize": 22, "crop": 16, "mean": [0.45], "std": [0.2]}})
    folder = write_folder(tmp_path / "test", 4)
    x, y = reference_batch(folder, 22, 16, [0.45], [0.2], grey=True)
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    expected = session.run(None, {session.get_inputs()[0].name: x[:, 0].copy()})[0].argmax(axis=1)
    assert len(set(expected.tolist())) > 1
    assert cli_accuracy(capsys, "--model", model, "--images", folder) == pytest.approx(float(np.mean(expected == y)))
    adapter = load_model(model)
    assert adapter.image_layout == NO_CHANNEL_AXIS
    np.testing.assert_array_equal(adapter.predict(x), expected)


@pytest.mark.slow
def test_grey_model_refuses_three_channel_normalisation(tmp_path, capsys):
    torch.manual_seed(1)
    model = export(GreyNet().eval(), tmp_path / "net.onnx", (1, 16, 16),
                   {"classes": CLASSES, "pipeline": {"resize": 22, "crop": 16, "mean": [0.5, 0.5, 0.5]}})
    folder = write_folder(tmp_path / "test", 2)
    assert main(["inspect", "--model", str(model), "--images", str(folder), "--quiet"]) == 2
    assert "recorded pipeline normalises 3 channel(s)" in capsys.readouterr().err
    assert main(["inspect", "--model", str(model), "--images", str(folder), "--mean", "0.5", "0.5", "0.5",
                 "--std", "0.2", "0.2", "0.2", "--quiet"]) == 2
    assert "`--mean` must be 1 number, for a grey (1-channel) model; got 3" in capsys.readouterr().err
    assert cli_accuracy(capsys, "--model", model, "--images", folder, "--mean", "0.5", "--std", "0.2") >= 0
    with pytest.raises(InputError, match=r"`pipeline` gives 3 channel\(s\) but the model's input takes 1"):
        fitaudit.audit(model, images=folder, pipeline=EvalPipeline(resize=22, crop=16), instruments=["overfit"],
                       options=QUIET)


@pytest.mark.slow
def test_scikit_learn_on_digit_images_gets_them_flattened(tmp_path, capsys):
    """scikit-learn's 8 x 8 digits as PNG files (a 3-pixel black border, the pipeline's margin): the model's own score."""
    skops_io = pytest.importorskip("skops.io")
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression

    digits = load_digits()
    pixels = np.rint(digits.images * (255 / 16)).astype(np.uint8)
    train, test = np.arange(0, 1500), np.arange(1500, 1797, 3)
    model = LogisticRegression(max_iter=2000).fit(pixels[train].reshape(len(train), -1) / 255.0, digits.target[train])
    path = tmp_path / "digits.skops"
    skops_io.dump(model, path)
    folder = tmp_path / "test"
    for i in test:
        (folder / str(digits.target[i])).mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.pad(pixels[i], 3)).save(folder / str(digits.target[i]) / f"{i}.png")
    files = open_images(folder).paths
    x = np.stack([np.asarray(Image.open(f))[3:11, 3:11].reshape(-1) / 255.0 for f in files])
    labels = np.asarray([int(f.split("/")[-2]) for f in files])
    truth = model.score(x, labels)
    assert 0.8 < truth < 1.0
    assert cli_accuracy(capsys, "--model", path, "--images", folder, "--resize", 14, "--crop", 8) == pytest.approx(truth)
    assert audit_accuracy(path, folder, tmp_path, pipeline={"resize": 14, "crop": 8}) == pytest.approx(truth)
