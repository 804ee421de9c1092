"""A user's own architecture under trust_code, ONNX export with metadata, and model metadata."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fitaudit._errors import InputError
from fitaudit.models import export_onnx, load_model, save_torch_model
from fitaudit.models.formats.base import ModelMetadata
from fitaudit.models.io import read_model_metadata

torch = pytest.importorskip("torch")
safetensors_torch = pytest.importorskip("safetensors.torch")

NET_PY = '''
import torch


class TinyNet(torch.nn.Module):
    def __init__(self, width=4, n_classes=3):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, width, 3)
        self.head = torch.nn.Linear(width, n_classes)

    def forward(self, x):
        return self.head(self.conv(x).relu().mean(dim=(2, 3)))
'''


def user_folder(tmp_path, *, class_name="TinyNet"):
    folder = tmp_path / "user-model"
    folder.mkdir()
    (folder / "net.py").write_text(NET_PY)
    namespace: dict = {}
    exec(compile(NET_PY, "net.py", "exec"), namespace)  # the test builds the reference module itself
    torch.manual_seed(0)
    net = namespace["TinyNet"](width=5, n_classes=3).eval()
    safetensors_torch.save_model(net, str(folder / "weights.safetensors"))
    config = {
        "architecture": {"file": "net.py", "class": class_name}, "kwargs": {"width": 5, "n_classes": 3},
        "n_classes": 3, "classes": ["ant", "bee", "cat"],
        "pipeline": {"resize": 20, "crop": 16, "mean": [0.5, 0.5, 0.5], "std": [0.25, 0.25, 0.25]},
    }
    (folder / "config.json").write_text(json.dumps(config))
    return folder, net


def test_user_architecture_loads_only_with_trust_code(tmp_path):
    folder, net = user_folder(tmp_path)
    with pytest.raises(InputError, match=r"`--model`: config.json names the Python file .*net.py' \(class 'TinyNet'\).*pass --trust-code"):
        load_model(folder, name="--model")
    model = load_model(folder, trust_code=True, name="--model")
    x = np.random.default_rng(0).normal(size=(4, 3, 16, 16)).astype(np.float32)
    np.testing.assert_allclose(model.logits(x), net(torch.from_numpy(x)).detach().numpy(), atol=1e-6)
    meta = read_model_metadata(folder)
    assert meta.classes == ["ant", "bee", "cat"] and meta.pipeline["resize"] == 20


def test_user_architecture_without_the_class(tmp_path):
    folder, _ = user_folder(tmp_path, class_name="Missing")
    with pytest.raises(InputError, match=r"`--model`: '.*net.py' does not define a class 'Missing' .*it defines: TinyNet"):
        load_model(folder, trust_code=True, name="--model")
    (folder / "net.py").write_text("raise RuntimeError('boom')\n")
    with pytest.raises(InputError, match=r"running '.*net.py' failed \(RuntimeError: boom\)"):
        load_model(folder, trust_code=True, name="--model")


@pytest.mark.slow
def test_onnx_export_keeps_classes_and_pipeline(tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from fitaudit.models.architectures import build_architecture

    torch.manual_seed(1)
    net = build_architecture({"architecture": "mlp", "kwargs": {"in_features": 12, "hidden_sizes": [6], "n_classes": 2}})
    path = export_onnx(
        net, tmp_path / "m.onnx", input_shape=(3, 2, 2),
        metadata={"classes": ["no", "yes"], "pipeline": {"resize": 3, "crop": 2}, "data_fingerprint": "abc"},
    )
    meta = read_model_metadata(path)
    assert meta == ModelMetadata(classes=["no", "yes"], pipeline={"resize": 3, "crop": 2}, data_fingerprint="abc",
                                 input_shape=(3, 2, 2))  # the graph's input, the batch dimension left out
    x = np.random.default_rng(1).normal(size=(5, 3, 2, 2)).astype(np.float32)
    np.testing.assert_allclose(load_model(path).logits(x), net(torch.from_numpy(x)).detach().numpy(), atol=1e-5)


def test_metadata_of_shapes_style_config_and_bad_values(tmp_path):
    from fitaudit.models.architectures import build_architecture

    config = {"architecture": "mlp", "kwargs": {"in_features": 4, "hidden_sizes": [], "n_classes": 2},
              "metadata": {"class_names": ["x", "y"], "data_fingerprint": "f00"}}
    folder = save_torch_model(build_architecture(config), config, tmp_path / "s")
    # no input_shape in the config: the built-in architecture's first layer declares 4 features
    assert read_model_metadata(folder) == ModelMetadata(classes=["x", "y"], data_fingerprint="f00", input_shape=(4,))
    config["classes"] = "x,y"
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(InputError, match=r"`--model`: 'classes' in the config.json of .* must be a list of class names"):
        read_model_metadata(folder)
