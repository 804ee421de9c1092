"""Model zoos: complete grids, determinism, parallel builds and resuming after an interruption."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fitaudit._errors import InputError
from fitaudit.options import RunOptions

torch = pytest.importorskip("torch")

from fitaudit.pgdl import zoo as zoo_module  # noqa: E402
from fitaudit.pgdl.zoo import ZooData, ZooSpec, build_zoo, default_zoo, digits_data  # noqa: E402


@pytest.fixture(scope="module")
def small_data() -> ZooData:
    data = digits_data()
    return ZooData("digits-small", data.x_train[:120], data.y_train[:120], data.x_test[:60], data.y_test[:60])


SPEC = ZooSpec(
    name="tiny",
    architecture="pgdl_vgg",
    grid={"width": [2, 3], "dropout": [0.0, 0.5], "batch_size": [16, 32]},
    fixed={"blocks": 1, "dense_layers": 1, "dense_width": 8},
    optimizer="adam",
    learning_rate=0.01,
    max_epochs=2,
)


def weights(zoo):
    return [{k: v.copy() for k, v in m.state.items()} for m in zoo.members]


def same_weights(a, b):
    return all(x.keys() == y.keys() and all(np.array_equal(x[k], y[k]) for k in x) for x, y in zip(a, b))


@pytest.mark.slow
def test_grid_is_complete_and_members_are_recorded(small_data):
    zoo = build_zoo(SPEC, data=small_data, options=RunOptions(progress=False))
    expected = [dict(zip(SPEC.grid, values)) for values in itertools.product(*SPEC.grid.values())]
    assert [m.hparams for m in zoo.members] == expected
    assert [m.model_id for m in zoo.members] == [str(i) for i in range(1, 9)]
    assert zoo.hparam_names == ["width", "dropout", "batch_size"]
    rows = zoo.table()
    assert [r["model_id"] for r in rows] == [m.model_id for m in zoo.members]
    assert rows[5]["width"] == 3 and rows[5]["dropout"] == 0.0 and rows[5]["batch_size"] == 32
    assert rows[5]["gap"] == pytest.approx(zoo.members[5].train_acc - zoo.members[5].test_acc)
    for member in zoo.members:
        assert member.kwargs["width"] == member.hparams["width"] and member.kwargs["dropout"] == member.hparams["dropout"]
        assert "batch_size" not in member.kwargs  # a training setting, not an architecture argument
        assert member.kwargs["in_channels"] == 1 and member.kwargs["image_size"] == [8, 8] and member.kwargs["n_classes"] == 10
        assert 0 <= member.test_acc <= 1 and 0 <= member.train_acc <= 1
        reached = member.train_loss <= SPEC.target_loss or member.train_acc >= SPEC.target_accuracy
        assert member.converged == reached and (member.epochs == 2 or reached)
        model = member.model()
        x = torch.from_numpy(small_data.x_train)
        with torch.no_grad():
            accuracy = float((model(x).argmax(1).numpy() == small_data.y_train).mean())
        assert accuracy == pytest.approx(member.train_acc)
        initial = member.initial_model()
        assert not torch.equal(initial[0].weight, model[0].weight)


@pytest.mark.slow
def test_stopping_criterion_stops_early(small_data):
    spec = ZooSpec(name="stop", architecture="pgdl_vgg", grid=SPEC.grid, fixed=SPEC.fixed, optimizer="adam", learning_rate=0.01, max_epochs=30, target_loss=1.5)
    zoo = build_zoo(spec, data=small_data, options=RunOptions(progress=False))
    stopped = [m for m in zoo.members if m.converged]
    assert stopped and all(m.epochs < 30 and m.train_loss <= 1.5 for m in stopped)


@pytest.mark.slow
def test_training_accuracy_target_stops_early(small_data):
    spec = ZooSpec(name="acc", architecture="pgdl_vgg", grid=SPEC.grid, fixed=SPEC.fixed, optimizer="adam",
                   learning_rate=0.01, max_epochs=30, target_loss=0.0, target_accuracy=0.6)  # fmt: skip
    zoo = build_zoo(spec, data=small_data, options=RunOptions(progress=False))
    stopped = [m for m in zoo.members if m.converged]
    assert stopped and all(m.train_acc >= 0.6 for m in stopped)
    assert any(m.epochs < 30 for m in stopped)  # early: before the cap
    assert all(m.converged for m in zoo.members if m.epochs < 30)  # a member stops before the cap only at the target
    assert all(m.train_acc < 0.6 for m in zoo.members if not m.converged)


@pytest.mark.slow
def test_learning_rate_is_halved_on_a_plateau(small_data, monkeypatch):
    """With patience 0, every epoch whose training loss is not 1% below the best so far halves the rate."""
    import torch

    rates = []
    original = torch.optim.lr_scheduler.ReduceLROnPlateau.step

    def recording(self, metrics):
        original(self, metrics)
        rates.append((float(metrics), self.optimizer.param_groups[0]["lr"]))

    monkeypatch.setattr(torch.optim.lr_scheduler.ReduceLROnPlateau, "step", recording)
    spec = ZooSpec(name="plateau", architecture="pgdl_vgg", grid={"width": [2, 3], "dropout": [0.0, 0.5], "batch_size": [16, 32]},
                   fixed=SPEC.fixed, optimizer="sgd", learning_rate=0.5, max_epochs=12, lr_patience=0)  # fmt: skip
    build_zoo(spec, data=small_data, options=RunOptions(progress=False, n_jobs=1))
    best, lr = float("inf"), 0.5
    for loss, new_lr in rates[:12]:  # the first member's epochs
        if loss < best * (1 - 0.01):
            best = loss
        else:
            lr = max(lr / 2, 0.5 / 10)
        assert new_lr == pytest.approx(lr)
    assert lr < 0.5  # the rule was exercised


@pytest.mark.slow
def test_same_seed_same_weights_other_seed_other_weights(small_data):
    a = build_zoo(SPEC, data=small_data, options=RunOptions(random_state=3, progress=False))
    b = build_zoo(SPEC, data=small_data, options=RunOptions(random_state=3, progress=False))
    c = build_zoo(SPEC, data=small_data, options=RunOptions(random_state=4, progress=False))
    assert same_weights(weights(a), weights(b))
    assert not same_weights(weights(a), weights(c))


@pytest.mark.slow
def test_n_jobs_two_gives_the_same_zoo(small_data):
    one = build_zoo(SPEC, data=small_data, options=RunOptions(n_jobs=1, progress=False))
    two = build_zoo(SPEC, data=small_data, options=RunOptions(n_jobs=2, progress=False))
    assert same_weights(weights(one), weights(two))
    assert [m.test_acc for m in one.members] == [m.test_acc for m in two.members]


@pytest.mark.slow
def test_dask_cluster_gives_the_same_zoo(small_data):
    distributed = pytest.importorskip("distributed")
    import joblib

    local = build_zoo(SPEC, data=small_data, options=RunOptions(progress=False))
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
        distributed.Client(cluster),
        joblib.parallel_config(backend="dask"),
    ):
        on_dask = build_zoo(SPEC, data=small_data, options=RunOptions(n_jobs=-1, progress=False))
    assert same_weights(weights(local), weights(on_dask))


@pytest.mark.slow
def test_resume_after_an_interruption_keeps_finished_members(small_data, tmp_path, monkeypatch):
    reference = build_zoo(SPEC, data=small_data, options=RunOptions(progress=False))
    original = zoo_module._train
    calls = []

    def interrupted(item, data):
        if len(calls) == 3:
            raise KeyboardInterrupt("killed")  # the 4th member dies mid-build
        calls.append(item["model_id"])
        return original(item, data)

    monkeypatch.setattr(zoo_module, "_train", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build_zoo(SPEC, data=small_data, checkpoint_dir=tmp_path, options=RunOptions(progress=False))
    assert len(list(zoo_module.CheckpointStore(tmp_path).keys())) == 3

    trained = []

    def counting(item, data):
        trained.append(item["model_id"])
        return original(item, data)

    monkeypatch.setattr(zoo_module, "_train", counting)
    resumed = build_zoo(SPEC, data=small_data, checkpoint_dir=tmp_path, options=RunOptions(progress=False))
    assert trained == ["4", "5", "6", "7", "8"]  # the three finished members were kept
    assert same_weights(weights(resumed), weights(reference))
    assert [m.test_acc for m in resumed.members] == [m.test_acc for m in reference.members]

    trained.clear()
    build_zoo(SPEC, data=small_data, checkpoint_dir=tmp_path, options=RunOptions(progress=False))
    assert trained == []  # everything reused
    changed = ZooSpec(**{**SPEC.__dict__, "learning_rate": 0.02})
    build_zoo(changed, data=small_data, checkpoint_dir=tmp_path, options=RunOptions(progress=False))
    assert len(trained) == 8  # a changed setting never reuses a member
    trained.clear()
    build_zoo(ZooSpec(**{**SPEC.__dict__, "lr_patience": 9}), data=small_data, checkpoint_dir=tmp_path, options=RunOptions(progress=False))
    assert len(trained) == 8  # nor a changed schedule
    trained.clear()
    other = ZooData("other", small_data.x_train[:100], small_data.y_train[:100], small_data.x_test, small_data.y_test)
    build_zoo(SPEC, data=other, checkpoint_dir=tmp_path, options=RunOptions(progress=False))
    assert len(trained) == 8  # nor does changed data


@pytest.mark.slow
def test_bad_specs_are_input_errors(small_data):
    two = ZooSpec(name="two", architecture="pgdl_vgg", grid={"width": [2, 3], "dropout": [0.0, 0.5]})
    with pytest.raises(InputError, match="at least 3 hyperparameters"):
        build_zoo(two, data=small_data, options=RunOptions(progress=False))
    dup = ZooSpec(name="dup", architecture="pgdl_vgg", grid={"width": [2, 2], "dropout": [0.0, 0.5], "batch_size": [8, 16]})
    with pytest.raises(InputError, match=r"`spec.grid\['width'\]` must be a list of at least 2 distinct values"):
        build_zoo(dup, data=small_data, options=RunOptions(progress=False))
    bad = ZooSpec(name="bad", architecture="pgdl_vgg", grid={"width": [2, 3], "dropout": [0.0, 0.5], "blocks": [1, 5]})
    with pytest.raises(InputError, match="below 1 pixel"):
        build_zoo(bad, data=small_data, options=RunOptions(progress=False))
    with pytest.raises(InputError, match="`data` must be a ZooData"):
        build_zoo(SPEC, options=RunOptions(progress=False))
    with pytest.raises(InputError, match="`name` must be one of"):
        default_zoo("mnist")


@pytest.mark.parametrize("name", ["digits", "shapes"])
def test_default_zoos_are_complete_grids(name):
    for size, count in (("quick", 8), ("default", 24)):
        spec, data = default_zoo(name, size)
        assert len(spec.grid) >= 3 and len(spec.points()) == count
        assert data.x_train.ndim == 4 and data.x_train.dtype == np.float32
        assert 0.0 <= data.x_train.min() and data.x_train.max() <= 1.0
        assert set(np.unique(data.y_train)) == set(range(data.n_classes))


@pytest.mark.slow
def test_members_are_trained_by_the_one_trainer(small_data, monkeypatch):
    """Every member goes through fitaudit.models.training.train_epochs (no loop of the zoo's own)."""
    from fitaudit.models import training

    calls = []

    def recording(*args, **kwargs):
        calls.append(kwargs["random_state"])
        return training.train_epochs(*args, **kwargs)

    monkeypatch.setattr(zoo_module, "train_epochs", recording)
    zoo = build_zoo(SPEC, data=small_data, options=RunOptions(progress=False))
    assert calls == [m.seed for m in zoo.members]
    assert all(1 <= m.epochs <= SPEC.max_epochs for m in zoo.members)
