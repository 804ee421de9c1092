"""The generator protocol: plain callables, validation on both sides, the Shapes world."""

from __future__ import annotations

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.data.factors import Factor, FactorSpace
from fitaudit.data.generators import Generator, as_generator, describe_generator, generate_checked
from fitaudit.data.shapes import ShapesGenerator

SPACE = FactorSpace([Factor("gain", 0.5, 2.0, 1.0, "x"), Factor("shift", -1.0, 1.0, 0.0, "x")])
BASE = np.arange(12.0).reshape(4, 3)


def scaled(instances: np.ndarray, factors: np.ndarray) -> np.ndarray:
    return BASE[instances] * factors[:, :1] + factors[:, 1:]


def test_callable_becomes_a_generator():
    gen = as_generator(scaled, factor_space=SPACE, labels=[0, 1, 0, 1])
    assert isinstance(gen, Generator) and gen.n_instances == 4
    out = generate_checked(gen, np.array([3, 0]), np.array([[2.0, 0.5], [1.0, 0.0]]))
    np.testing.assert_allclose(out, [BASE[3] * 2 + 0.5, BASE[0]])
    assert describe_generator(gen)["labels"] == [0, 1, 0, 1]
    assert as_generator(gen) is gen


def test_callable_needs_space_and_labels():
    with pytest.raises(InputError, match="given with `factor_space` and `labels`"):
        as_generator(scaled, factor_space=SPACE)


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (lambda i, s: BASE[i][:1], r"one input per query \(2\); got an array of shape \(1, 3\)"),
        (lambda i, s: np.full((len(i), 3), np.nan), "NaN or infinite"),
        (lambda i, s: np.array(["a"] * len(i)), "must return numbers"),
    ],
)
def test_broken_generators_are_named(fn, message):
    gen = as_generator(fn, factor_space=SPACE, labels=[0, 1, 0, 1])
    with pytest.raises(InputError, match=message):
        generate_checked(gen, np.array([0, 1]), np.array([[1.0, 0.0], [1.0, 0.0]]))


def test_bad_queries_are_named():
    gen = as_generator(scaled, factor_space=SPACE, labels=[0, 1, 0, 1])
    with pytest.raises(InputError, match=r"`instances` must lie in \[0, 3\]"):
        generate_checked(gen, np.array([4]), np.array([[1.0, 0.0]]))
    with pytest.raises(InputError, match=r"factor `gain` must be in \[0.5, 2\]"):
        generate_checked(gen, np.array([0]), np.array([[3.0, 0.0]]))
    with pytest.raises(InputError, match="one row per instance"):
        generate_checked(gen, np.array([0, 1]), np.array([[1.0, 0.0]]))


def test_shapes_generator_labels_and_batch_independence():
    gen = ShapesGenerator(2, classes=["cube", "sphere"], image_size=16)
    assert gen.labels.tolist() == [0, 1, 0, 1]
    assert gen.class_names == ["cube", "sphere"]
    factors = gen.factor_space.sample(3, random_state=1)
    batch = generate_checked(gen, np.array([0, 1, 3]), factors)
    alone = generate_checked(gen, np.array([1]), factors[1:2])
    assert batch.shape == (3, 3, 16, 16) and batch.dtype == np.float32
    np.testing.assert_array_equal(batch[1], alone[0])
    narrowed = ShapesGenerator(
        1, classes=["cube"], factor_space=gen.factor_space.restrict(camera_elevation=(-30, 30))
    )
    top_view = gen.factor_space.to_array({"camera_elevation": 60.0})
    with pytest.raises(InputError, match=r"factor `camera_elevation` must be in \[-30, 30\]"):
        generate_checked(narrowed, np.array([0]), top_view)
