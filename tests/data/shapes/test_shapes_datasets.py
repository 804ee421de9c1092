from __future__ import annotations

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.data.io import load_npz
from fitaudit.data.shapes import (
    CLASS_NAMES,
    SHAPE_CLASSES,
    instances_from_ids,
    sample_instances,
    shapes_factor_space,
)
from fitaudit.data.shapes.datasets import make_dataset, make_splits
from fitaudit.data.shapes.instances import _fibonacci_sphere


def test_instances_are_a_pure_function_of_their_id():
    a = instances_from_ids([3, 10, 99], [0, 5, 7], world_seed=4)
    b = instances_from_ids([99, 3], [7, 0], world_seed=4)
    np.testing.assert_array_equal(a.scale[[2, 0]], b.scale)
    np.testing.assert_array_equal(a.colour[[2, 0]], b.colour)
    other_world = instances_from_ids([3], [0], world_seed=5)
    assert not np.array_equal(other_world.colour, a.colour[:1])


def test_instances_fill_the_unit_sphere_and_respect_class_ranges():
    objects = sample_instances(4, world_seed=0)
    assert np.all(objects.colour >= 0) and np.all(objects.colour <= 1)
    dirs = _fibonacci_sphere(3000).astype(np.float32)
    for i in range(0, len(objects), 5):
        shape_class = SHAPE_CLASSES[objects.class_id[i]]
        scale = objects.scale[i].astype(np.float32)
        # probe other directions than the normalisation did: the surface stays inside the unit sphere
        o = shape_class.pose.T @ (3.0 * dirs).T / scale[:, None]
        d = shape_class.pose.T @ (-dirs).T / scale[:, None]
        params = np.repeat(objects.params[i][:, None], len(dirs), axis=1).astype(np.float32)
        t, _ = shape_class.hit(o, d, params)
        radius = np.where(np.isfinite(t), 3.0 - t, 0.0)
        assert 0.9 <= radius.max() <= 1.0, shape_class.name
        for k, (low, high) in enumerate(shape_class.param_ranges):
            assert low <= objects.params[i, k] <= high


def test_splits_have_disjoint_instances():
    splits = make_splits({"train": 3, "validation": 2, "test": 3}, {"train": 2, "validation": 1, "test": 1}, random_state=1)
    ids = {name: set(data.instance_ids.tolist()) for name, data in splits.items()}
    assert not ids["train"] & ids["test"]
    assert not ids["train"] & ids["validation"]
    assert not ids["validation"] & ids["test"]
    # and different objects: no train instance has the colour of a test instance
    train = sample_instances(3, split="train")
    test = sample_instances(3, split="test")
    assert not np.any(np.all(np.isclose(train.colour[:, None], test.colour[None]), axis=2))


def test_dataset_layout_labels_and_factor_ranges():
    space = shapes_factor_space().restrict(camera_elevation=(-30, 30))
    data = make_dataset(2, 5, classes=["torus", "cube", "star"], factor_space=space, random_state=3)
    assert data.images.shape == (30, 3, 32, 32)
    assert data.class_names == ["torus", "cube", "star"]
    np.testing.assert_array_equal(np.bincount(data.labels), [10, 10, 10])
    # m consecutive renders of every object, all of one class
    per_object = data.instance_ids.reshape(-1, 5)
    assert np.all(per_object == per_object[:, :1])
    assert len(np.unique(per_object[:, 0])) == 6
    elevation = data.factors[:, data.factor_names.index("camera_elevation")]
    assert elevation.min() >= -30 and elevation.max() <= 30
    # labels index the given class list
    reference = instances_from_ids(data.instance_ids, [CLASS_NAMES.index(data.class_names[c]) for c in data.labels])
    np.testing.assert_array_equal(reference.class_id, [CLASS_NAMES.index(data.class_names[c]) for c in data.labels])
    summary = data.summary()
    assert summary["n_objects"] == 6 and summary["factor_ranges"]["camera_elevation"] == [-30, 30]


def test_dataset_is_reproducible_and_seeded():
    a = make_dataset(1, 2, random_state=7)
    b = make_dataset(1, 2, random_state=7)
    c = make_dataset(1, 2, random_state=8)
    np.testing.assert_array_equal(a.images, b.images)
    np.testing.assert_array_equal(a.instance_ids, c.instance_ids)
    assert not np.array_equal(a.factors, c.factors)


def test_save_npz_is_readable_by_the_loader(tmp_path):
    data = make_dataset(1, 1, classes=["sphere", "cone"])
    path = data.save_npz(tmp_path / "d.npz")
    x, y = load_npz(path, image=True)
    np.testing.assert_array_equal(x, data.images)
    np.testing.assert_array_equal(y, data.labels)
    with np.load(path, allow_pickle=False) as archive:
        assert list(archive["class_names"]) == ["sphere", "cone"]
        assert int(archive["margin"]) == 0


def test_bad_dataset_arguments():
    with pytest.raises(InputError, match="`n_objects_per_class` must be a positive integer; got 0"):
        make_dataset(0, 1)
    with pytest.raises(InputError, match="`renders_per_object` must be a positive integer; got -1"):
        make_dataset(1, -1)
    with pytest.raises(InputError, match="`split` must be one of"):
        make_dataset(1, 1, split="holdout")
    with pytest.raises(InputError, match="`classes` holds unknown class 'blob'"):
        make_dataset(1, 1, classes=["cube", "blob"])
    with pytest.raises(InputError, match="`classes` must not repeat"):
        make_dataset(1, 1, classes=["cube", "cube"])
    with pytest.raises(InputError, match="`factor_space` must be shapes_factor_space"):
        make_dataset(1, 1, factor_space="wide")
    with pytest.raises(InputError, match="unknown split"):
        make_splits({"dev": 1}, 1)
