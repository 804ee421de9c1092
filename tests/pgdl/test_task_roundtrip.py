"""Zoo -> PGDL task directory -> load_task: the same networks, data and records come back."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from fitaudit._errors import InputError
from fitaudit.options import RunOptions

torch = pytest.importorskip("torch")
pytest.importorskip("h5py")
pytest.importorskip("tfrecord")

from fitaudit.pgdl import build_zoo_task, load_task  # noqa: E402
from fitaudit.pgdl.zoo import ZooData, ZooSpec, digits_data  # noqa: E402


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    data = digits_data()
    data = ZooData("digits-small", data.x_train[:100], data.y_train[:100], data.x_test[:50], data.y_test[:50])
    spec = ZooSpec(
        name="tiny-nin", architecture="pgdl_nin",
        grid={"width": [3, 4], "batch_norm": [False, True], "dropout": [0.0, 0.3]},
        fixed={"blocks": 2}, optimizer="adam", learning_rate=0.01, max_epochs=1,
    )  # fmt: skip
    out = tmp_path_factory.mktemp("task") / "digits-nin"
    path, zoo = build_zoo_task(out, spec, data=data, options=RunOptions(progress=False), shard_size=30)
    return path, zoo


@pytest.mark.slow
def test_written_task_has_the_competition_layout(built):
    path, zoo = built
    assert sorted(p.name for p in (path / "dataset_1" / "train").iterdir()) == ["shard_0.tfrecord", "shard_1.tfrecord", "shard_2.tfrecord", "shard_3.tfrecord"]
    configs = json.loads((path / "model_configs.json").read_text())
    assert sorted(configs, key=int) == [str(i) for i in range(1, 9)]
    entry = configs["7"]  # width 4, batch norm on, dropout 0 (the last hyperparameter varies fastest)
    assert entry["hparams"]["batch_norm"] == {"current_value": True, "possible_values": [False, True]}
    assert set(entry["metrics"]) == {"train_acc", "test_acc"}
    config = json.loads((path / "model_7" / "config.json").read_text())
    assert config["input_shape"] == [8, 8, 1]
    assert [layer["layer_name"] for layer in config["model_config"]][-2:] == ["Conv2D", "GlobalAveragePooling2D"]
    for i in range(1, 9):
        assert (path / f"model_{i}" / "weights.hdf5").is_file() and (path / f"model_{i}" / "weights_init.hdf5").is_file()


@pytest.mark.slow
def test_load_task_gives_back_models_data_and_records(built):
    path, zoo = built
    task = load_task(path)
    assert task.model_ids == [m.model_id for m in zoo.members]
    x, y = task.train_data()
    assert np.array_equal(x, zoo.data.x_train) and np.array_equal(y, zoo.data.y_train)
    x_test, y_test = task.test_data()
    assert np.array_equal(x_test, zoo.data.x_test) and np.array_equal(y_test, zoo.data.y_test)
    batch = torch.from_numpy(np.concatenate([x[:20], x_test[:20]]))
    for member in zoo.members:
        with torch.no_grad():
            np.testing.assert_allclose(task.model(member.model_id)(batch).numpy(), member.model()(batch).numpy(), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(task.model(f"model_{member.model_id}", initial=True)(batch).numpy(), member.initial_model()(batch).numpy(), rtol=1e-5, atol=1e-6)
        assert task.hparams(member.model_id) == member.hparams
        assert task.metrics(int(member.model_id)) == {"train_acc": member.train_acc, "test_acc": member.test_acc}
        assert task.gap(member.model_id) == pytest.approx(member.train_acc - member.test_acc)
    assert not task.model("1").training


@pytest.mark.slow
def test_rebuilding_resumes_from_the_checkpoints(built, tmp_path):
    path, zoo = built
    from fitaudit.pgdl import zoo as zoo_module

    trained = []
    original = zoo_module._train
    zoo_module._train = lambda item, data: trained.append(item) or original(item, data)
    try:
        _, again = build_zoo_task(tmp_path / "copy", zoo.spec, data=zoo.data, checkpoint_dir=path / ".zoo-checkpoints", options=RunOptions(progress=False))
    finally:
        zoo_module._train = original
    assert trained == []
    assert [m.test_acc for m in again.members] == [m.test_acc for m in zoo.members]


@pytest.mark.slow
def test_bad_task_directories_are_named(built, tmp_path):
    path, _ = built
    copy = tmp_path / "task"
    shutil.copytree(path, copy)
    (copy / "model_9").mkdir()
    with pytest.raises(InputError, match=r"folders model_9 are not listed in model_configs.json"):
        load_task(copy)
    (copy / "model_9").rmdir()
    (copy / "model_3" / "weights.hdf5").unlink()
    with pytest.raises(InputError, match=r"model_3/weights.hdf5' does not exist"):
        load_task(copy)
    shutil.copy(path / "model_3" / "weights.hdf5", copy / "model_3" / "weights.hdf5")
    shutil.rmtree(copy / "model_8")
    with pytest.raises(InputError, match="lists models without a folder: model_8"):
        load_task(copy)
    shutil.copytree(path / "model_8", copy / "model_8")
    task = load_task(copy)
    (copy / "model_2" / "weights.hdf5").write_bytes(b"\x89HDF garbage")
    with pytest.raises(InputError, match=r"model_2/weights.hdf5.*not a readable HDF5 file"):
        task.model("2")
    with pytest.raises(InputError, match="`model_id` must be one of the task's models"):
        task.model("42")
    shutil.copy(path / "model_5" / "weights.hdf5", copy / "model_2" / "weights.hdf5")  # width 4 into width 3
    with pytest.raises(InputError, match=r"model_2/weights.hdf5': layer 'conv2d' weight 'kernel' has shape \(3, 3, 1, 4\)"):
        task.model("2")
    shutil.rmtree(copy / "dataset_1" / "test")
    with pytest.raises(InputError, match="has no test data: no shard_"):
        task.test_data()
    (copy / "model_configs.json").write_text("{not json")
    with pytest.raises(InputError, match=r"model_configs.json' is not valid JSON"):
        load_task(copy)
    (copy / "model_configs.json").unlink()
    with pytest.raises(InputError, match=r"model_configs.json' does not exist"):
        load_task(copy)
    with pytest.raises(InputError, match="is not a folder"):
        load_task(tmp_path / "nowhere")
