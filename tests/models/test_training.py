from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fitaudit import InputError  # noqa: E402
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


@pytest.fixture
def tiny(shapes_tiny):
    return shapes_tiny


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


def _assert_same_weights(one, two):
    a, b = _weights(one), _weights(two)
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=0)


def _interrupt_at(monkeypatch, epoch):
    """Make the trainer die (as under Ctrl-C) when it starts ``epoch`` (0-based)."""
    from fitaudit.models import training

    real = training._one_epoch

    def dying(*args):
        if args[-1] == epoch:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(training, "_one_epoch", dying)


@pytest.mark.parametrize("name", ["shapes_alexnet", "shapes_resnet"])
@pytest.mark.slow
def test_interrupted_then_resumed_run_equals_an_uninterrupted_one(tmp_path, tiny, name, monkeypatch):
    options = dict(architecture=name, kwargs={"width": 4}, batch_size=8, random_state=3, progress=False, epochs=3)
    straight, result = train_classifier(tiny.images, tiny.labels, checkpoint_dir=tmp_path / "a", **options)
    with monkeypatch.context() as patch:
        _interrupt_at(patch, 2)
        with pytest.raises(KeyboardInterrupt):
            train_classifier(tiny.images, tiny.labels, checkpoint_dir=tmp_path / "b", **options)
    (state_file,) = (tmp_path / "b").glob("*.json")
    state = json.loads(state_file.read_text())["value"]
    assert state["epochs_done"] == 2 and [h["epoch"] for h in state["history"]] == [1, 2]
    assert [p.name for p in (tmp_path / "b" / state_file.stem).iterdir()] == ["epoch-2.safetensors"]
    with monkeypatch.context() as patch:
        _interrupt_at(patch, 0)  # epochs 1 and 2 must not run again
        _interrupt_at(patch, 1)
        resumed, resumed_result = train_classifier(tiny.images, tiny.labels, checkpoint_dir=tmp_path / "b", **options)
    assert len(resumed_result.history) == 3 and resumed_result.seed == 3
    _assert_same_weights(straight, resumed)
    assert result.history[-1]["loss"] == resumed_result.history[-1]["loss"]
    # a finished run is read back, not trained again
    with monkeypatch.context() as patch:
        _interrupt_at(patch, 2)
        again, _ = train_classifier(tiny.images, tiny.labels, checkpoint_dir=tmp_path / "b", **options)
    _assert_same_weights(straight, again)


@pytest.mark.parametrize(
    "change",
    [{"learning_rate": 1e-2}, {"epochs": 4}, {"random_state": 4}, {"kwargs": {"width": 6}},
     {"architecture": "shapes_resnet"}, {"augment": False}, {"data": "other"}, {"torch_threads": 2}],
    ids=lambda c: next(iter(c)),
)
@pytest.mark.slow
def test_a_changed_setting_or_data_set_never_resumes_an_old_run(tmp_path, tiny, change, monkeypatch):
    base = dict(architecture="shapes_alexnet", kwargs={"width": 4}, batch_size=8, random_state=3,
                progress=False, epochs=3, learning_rate=2e-3, augment=True)
    images, labels = tiny.images, tiny.labels
    with monkeypatch.context() as patch:  # a run with the base settings, interrupted after 2 epochs
        _interrupt_at(patch, 2)
        with pytest.raises(KeyboardInterrupt):
            train_classifier(images, labels, checkpoint_dir=tmp_path / "shared", **base)
    changed = {**base, **change}
    if changed.pop("data", None):
        images, labels = images[::-1].copy(), labels[::-1].copy()
    threads = changed.pop("torch_threads", None)
    if threads:  # CPU training differs across thread counts: another count is another run
        torch.set_num_threads(threads)
    continued, _ = train_classifier(images, labels, checkpoint_dir=tmp_path / "shared", **changed)
    fresh, _ = train_classifier(images, labels, checkpoint_dir=tmp_path / "fresh", **changed)
    _assert_same_weights(continued, fresh)
    assert len(list((tmp_path / "shared").glob("*.json"))) == 2


def test_one_progress_bar_over_the_epochs(tiny, capsys):
    train_classifier(tiny.images, tiny.labels, architecture="shapes_resnet", kwargs={"width": 4},
                     epochs=2, batch_size=8, random_state=0)
    err = capsys.readouterr().err
    assert "training shapes_resnet" in err and "2/2" in err and "loss=" in err
    assert "epoch 1/2:" not in err and "batch" not in err


def test_saved_model_loads_through_the_adapters(tmp_path, tiny):
    module, result = train_classifier(
        tiny.images, tiny.labels, architecture="shapes_resnet", kwargs={"width": 4}, epochs=1,
        batch_size=8, checkpoint_dir=tmp_path, metadata={"class_names": tiny.class_names}, progress=False,
    )
    assert result.model_dir == str(tmp_path / "model")
    loaded = load_model(result.model_dir)
    reference = as_classifier(module)
    np.testing.assert_allclose(loaded.logits(tiny.images), reference.logits(tiny.images), atol=1e-5)
    config = json.loads((tmp_path / "model" / "config.json").read_text())
    assert config["metadata"]["class_names"] == ["sphere", "cube", "torus"]
    assert config["input_shape"] == [3, 32, 32]
    assert config["torch_threads"] == result.torch_threads == 1
    assert "torch_threads" in repr(result)


def test_damaged_checkpoint_is_named(tmp_path, tiny):
    options = dict(architecture="shapes_resnet", kwargs={"width": 4}, epochs=1, batch_size=8,
                   checkpoint_dir=tmp_path, progress=False, random_state=0)
    train_classifier(tiny.images, tiny.labels, **options)
    (tensors,) = tmp_path.glob("*/epoch-1.safetensors")
    tensors.write_bytes(b"garbage")
    with pytest.raises(InputError, match="`checkpoint_dir`: the checkpoint .*epoch-1.safetensors.* cannot be read"):
        train_classifier(tiny.images, tiny.labels, **options)


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
    with pytest.raises(InputError, match="`random_state` must be a non-negative integer seed; got -1"):
        train_classifier(tiny.images, tiny.labels, random_state=-1)


def test_checkpoint_dir_naming_a_file_is_refused(tiny, tmp_path):
    (tmp_path / "taken").write_text("not a folder")
    with pytest.raises(InputError, match="`checkpoint_dir` must be a folder; '.*taken' is an existing file"):
        train_classifier(tiny.images, tiny.labels, checkpoint_dir=tmp_path / "taken", progress=False)


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
