"""Safe saving and loading of model files: round trips and refusals."""

from __future__ import annotations

import json
import operator

import numpy as np
import pytest
import skops.io
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

from fitaudit import InputError
from fitaudit.models import as_classifier, load_model, load_torch_module, save_torch_model
from fitaudit.models.architectures import build_architecture, list_architectures

CONFIG = {"architecture": "mlp", "kwargs": {"in_features": 5, "hidden_sizes": [7], "n_classes": 4}}


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(2)
    x = rng.normal(size=(40, 5))
    return x, (x[:, 0] + x[:, 1] > 0).astype(int)


def test_builtin_architectures_are_registered():
    assert {"linear", "mlp"} <= set(list_architectures())
    linear = build_architecture({"architecture": "linear", "kwargs": {"in_features": 12, "n_classes": 3}})
    assert linear(torch.zeros(2, 3, 2, 2)).shape == (2, 3)  # images are flattened
    with pytest.raises(InputError, match="`hidden_sizes` must be a positive integer; got 0"):
        build_architecture({"architecture": "mlp", "kwargs": {"in_features": 3, "hidden_sizes": [0], "n_classes": 2}})


def test_torch_round_trip(tmp_path, data):
    x, _ = data
    torch.manual_seed(0)
    module = build_architecture(CONFIG)
    folder = save_torch_model(module, {**CONFIG, "metadata": {"trained_on": "nothing"}}, tmp_path / "net")
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "weights.safetensors"]
    assert json.loads((folder / "config.json").read_text())["metadata"] == {"trained_on": "nothing"}
    expected = as_classifier(module).logits(x)
    for path in (folder, folder / "config.json", folder / "weights.safetensors", str(folder)):
        adapter = load_model(path)
        assert adapter.kind == "torch" and adapter.n_classes == 4
        np.testing.assert_array_equal(adapter.logits(x), expected)
    reloaded = load_torch_module(folder)
    for key, value in module.state_dict().items():
        assert torch.equal(reloaded.state_dict()[key], value)


def test_torch_config_n_classes_and_input_shape_are_used(tmp_path):
    module = build_architecture(CONFIG)
    folder = save_torch_model(module, {**CONFIG, "n_classes": 4, "input_shape": [5]}, tmp_path / "net")
    adapter = load_model(folder)
    assert adapter.n_classes == 4 and adapter.input_shape == (5,)
    assert as_classifier(str(folder)).n_classes == 4
    with pytest.raises(InputError, match=r"`x` must have shape \(n, 5\) for this torch model; got shape \(2, 1, 5\)"):
        adapter.predict(np.zeros((2, 1, 5)))


def test_torch_loading_errors(tmp_path):
    module = build_architecture(CONFIG)
    with pytest.raises(InputError, match="`module` does not match architecture 'linear'"):
        save_torch_model(module, {"architecture": "linear", "kwargs": {"in_features": 5, "n_classes": 4}}, tmp_path / "a")
    with pytest.raises(InputError, match="`config` must be JSON-serialisable"):
        save_torch_model(module, {**CONFIG, "metadata": object()}, tmp_path / "b")

    folder = save_torch_model(module, CONFIG, tmp_path / "net")
    (folder / "config.json").write_text(json.dumps({"architecture": "resnet9000", "kwargs": {}}))
    with pytest.raises(InputError, match=r"`config\['architecture'\]` must be a built-in architecture .*'resnet9000'"):
        load_model(folder)
    (folder / "config.json").write_text(json.dumps({**CONFIG, "kwargs": {**CONFIG["kwargs"], "hidden_sizes": [9]}}))
    with pytest.raises(InputError, match="`path`: could not read weights|`path`: the weights do not fit"):
        load_model(folder)
    (folder / "config.json").write_text("{not json")
    with pytest.raises(InputError, match="is not valid JSON"):
        load_model(folder, name="--model")
    (folder / "weights.safetensors").unlink()
    with pytest.raises(InputError, match="config.json' is not valid JSON"):  # the broken file is named first
        load_model(folder, name="m")
    (folder / "config.json").write_text(json.dumps(CONFIG))
    with pytest.raises(InputError, match="`m`: a torch model needs config.json and weights.safetensors side by side"):
        load_model(folder, name="m")
    with pytest.raises(InputError, match="`path`: '.*nothing-here' does not exist"):
        load_model(tmp_path / "nothing-here")


def test_pickle_files_are_refused(tmp_path):
    module = build_architecture(CONFIG)
    pt = tmp_path / "model.pt"
    torch.save(module, pt)
    with pytest.raises(InputError, match="may be a pickle, and fitaudit never unpickles model files; use ONNX"):
        load_model(pt)
    with pytest.raises(InputError, match="is not a TorchScript archive"):
        load_model(pt, trust_torchscript=True)
    pkl = tmp_path / "model.pkl"
    pkl.write_bytes(b"\x80\x04N.")
    with pytest.raises(InputError, match="'.*model.pkl' is a pickle, and fitaudit never unpickles"):
        load_model(pkl)
    odd = tmp_path / "model.bin"
    odd.write_bytes(b"")
    with pytest.raises(InputError, match="cannot tell the format"):
        load_model(odd)


def test_torchscript_only_when_trusted(tmp_path, data):
    x, _ = data
    module = build_architecture(CONFIG).eval()
    path = tmp_path / "scripted.pt"
    torch.jit.script(module).save(str(path))
    with pytest.raises(InputError, match="trust_torchscript=True"):
        load_model(path)
    adapter = load_model(path, trust_torchscript=True, n_classes=4)
    np.testing.assert_allclose(adapter.logits(x), as_classifier(module).logits(x), atol=1e-6)


def test_skops_round_trip(tmp_path, data):
    x, y = data
    estimator = make_pipeline(StandardScaler(), LogisticRegression()).fit(x, y)
    path = tmp_path / "model.skops"
    skops.io.dump(estimator, path)
    adapter = load_model(path)
    assert adapter.kind == "sklearn" and adapter.n_classes == 2
    np.testing.assert_allclose(adapter.predict_proba(x), estimator.predict_proba(x))
    # a table model takes a memory-bounded chunk of the rows a call, unless a batch size is named
    assert adapter.batch_size is None and as_classifier(path).batch_size is None
    assert load_model(path, batch_size=16).batch_size == 16


def test_an_image_model_file_keeps_256_rows_a_call(tmp_path):
    folder = save_torch_model(build_architecture(CONFIG), CONFIG, tmp_path / "net")
    assert load_model(folder).batch_size == 256


def test_skops_untrusted_types_are_refused(tmp_path, data):
    x, y = data
    estimator = make_pipeline(FunctionTransformer(operator.neg), LogisticRegression()).fit(x, y)
    path = tmp_path / "model.skops"
    skops.io.dump(estimator, path)
    with pytest.raises(InputError, match="does not trust: _operator.neg"):
        load_model(path)
    dangerous = tmp_path / "eval.skops"
    skops.io.dump(make_pipeline(FunctionTransformer(eval), LogisticRegression()), dangerous)
    with pytest.raises(InputError, match="does not trust: builtins.eval"):
        load_model(dangerous)
    broken = tmp_path / "broken.skops"
    broken.write_bytes(b"not a zip")
    with pytest.raises(InputError, match="is not a valid .skops file"):
        load_model(broken)


def test_onnx_file_errors(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"garbage")
    with pytest.raises(InputError, match="`--model`: file '.*bad.onnx' could not be opened as an ONNX model"):
        load_model(bad, name="--model")
    with pytest.raises(InputError, match="`path` must be a file or folder path; got int"):
        load_model(3)  # type: ignore[arg-type]
