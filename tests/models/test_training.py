from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fitaudit import InputError  # noqa: E402
from fitaudit.data.shapes.datasets import make_dataset  # noqa: E402
from fitaudit.models import as_classifier  # noqa: E402
from fitaudit.models.architectures import build_architecture, list_architectures  # noqa: E402
from fitaudit.models.io import load_model  # noqa: E402
from fitaudit.models.training import train_classifier  # noqa: E402


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models train ~10x faster on one thread on a busy machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tiny():
    return make_dataset(3, 2, classes=["sphere", "cube", "torus"], random_state=0)


@pytest.mark.parametrize("name", ["shapes_alexnet", "shapes_resnet"])
def test_architectures_are_registered_and_take_both_sizes(name):
    assert name in list_architectures()
    module = build_architecture({"architecture": name, "kwargs": {"n_classes": 12, "width": 8}})
    module.eval()
    for size in (32, 64):
        assert module(torch.rand(2, 3, size, size)).shape == (2, 12)
    with pytest.raises(InputError, match="`n_classes` must be an integer >= 2"):
        build_architecture({"architecture": name, "kwargs": {"n_classes": 1}})


def _weights(module):
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


@pytest.mark.parametrize("name", ["shapes_alexnet", "shapes_resnet"])
def test_interrupted_then_resumed_run_equals_an_uninterrupted_one(tmp_path, tiny, name):
    options = dict(architecture=name, kwargs={"width": 4}, batch_size=8, random_state=3, progress=False)
    straight, result = train_classifier(tiny.images, tiny.labels, epochs=3, checkpoint_dir=tmp_path / "a", **options)
    # "interrupted" after one epoch: a run asked for 1 epoch leaves the same checkpoint
    train_classifier(tiny.images, tiny.labels, epochs=1, checkpoint_dir=tmp_path / "b", **options)
    state = json.loads((tmp_path / "b" / "state.json").read_text())
    assert state["epochs_done"] == 1
    # the cosine schedule depends on the total, so the resumed run must know it: 3
    resumed, resumed_result = train_classifier(
        tiny.images, tiny.labels, epochs=3, checkpoint_dir=tmp_path / "b", **options
    )
    assert len(resumed_result.history) == 3
    a, b = _weights(straight), _weights(resumed)
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=0)
    assert result.history[-1]["loss"] == resumed_result.history[-1]["loss"]


def test_saved_model_loads_through_the_adapters(tmp_path, tiny):
    module, result = train_classifier(
        tiny.images, tiny.labels, architecture="shapes_resnet", kwargs={"width": 4}, epochs=1,
        batch_size=8, checkpoint_dir=tmp_path, metadata={"class_names": tiny.class_names}, progress=False,
    )
    assert result.model_dir is not None
    loaded = load_model(result.model_dir)
    reference = as_classifier(module)
    np.testing.assert_allclose(loaded.logits(tiny.images), reference.logits(tiny.images), atol=1e-5)
    config = json.loads((tmp_path / "model" / "config.json").read_text())
    assert config["metadata"]["class_names"] == ["sphere", "cube", "torus"]
    assert config["input_shape"] == [3, 32, 32]


def test_checkpoint_of_another_architecture_is_refused(tmp_path, tiny):
    options = dict(kwargs={"width": 4}, epochs=1, batch_size=8, checkpoint_dir=tmp_path, progress=False)
    train_classifier(tiny.images, tiny.labels, architecture="shapes_resnet", **options)
    with pytest.raises(InputError, match="`checkpoint_dir` .* holds a checkpoint of"):
        train_classifier(tiny.images, tiny.labels, architecture="shapes_alexnet", **options)


def test_bad_training_input(tiny):
    with pytest.raises(InputError, match="`x` must have 4 dimension"):
        train_classifier(tiny.images[:, 0], tiny.labels)
    with pytest.raises(InputError, match="`y` must have 18 entries"):
        train_classifier(tiny.images, tiny.labels[:5])
    with pytest.raises(InputError, match="`epochs` must be a positive integer; got 0"):
        train_classifier(tiny.images, tiny.labels, epochs=0)
    with pytest.raises(InputError, match="`x_val` and `y_val` must be given together"):
        train_classifier(tiny.images, tiny.labels, x_val=tiny.images)
    with pytest.raises(InputError, match="`x` must have values in \\[0, 1\\]"):
        train_classifier(tiny.images * 2, tiny.labels)


def test_recalibrated_batch_norm_holds_the_data_mean(tiny):
    from fitaudit.models.training import recalibrate_batch_norm

    torch.manual_seed(0)
    module = build_architecture({"architecture": "shapes_resnet", "kwargs": {"n_classes": 3, "width": 4}})
    recalibrate_batch_norm(module, tiny.images, batch_size=9)  # two equal batches
    with torch.no_grad():
        stem = module[0](torch.from_numpy(tiny.images))
    expected = stem.mean(dim=(0, 2, 3))
    torch.testing.assert_close(module[1].running_mean, expected, rtol=1e-4, atol=1e-5)
    assert not module.training
