from __future__ import annotations

import dataclasses
import sys

import numpy as np
import pytest
from _render_reference import reference_render

from fitaudit import InputError
from fitaudit.data.shapes import (
    CLASS_NAMES,
    FactorSpace,
    render,
    sample_instances,
    shapes_factor_space,
)
from fitaudit.data.shapes.render import BACKGROUND, render_unchecked


@pytest.fixture(scope="module")
def scenes():
    objects = sample_instances(3, world_seed=5)
    factors = shapes_factor_space().sample(len(objects), random_state=11)
    return objects, factors


def test_shape_dtype_and_value_range(scenes):
    objects, factors = scenes
    for size in (32, 64):
        images = render(objects, factors, image_size=size)
        assert images.shape == (len(objects), 3, size, size)
        assert images.dtype == np.float32
        assert images.min() >= 0.0 and images.max() <= 1.0


def test_deterministic_and_independent_of_the_batch(scenes):
    objects, factors = scenes
    full = render(objects, factors)
    again = render(objects, factors)
    np.testing.assert_array_equal(full, again)
    # each image depends only on its own (z, s): render subsets in another order
    order = np.arange(len(objects))[::-3]
    np.testing.assert_array_equal(render(objects.take(order), factors[order]), full[order])
    np.testing.assert_array_equal(render(objects.take([4]), factors[[4]]), full[[4]])


def test_object_in_view_visible_and_lit_for_every_class():
    """Proxies for label preservation over the whole factor box (see the contact sheet).

    At every factor setting the object lies inside the frame (the border is
    background), covers enough pixels to be seen, and is lit.
    """
    space = shapes_factor_space()
    objects = sample_instances(2, world_seed=1)
    rows = np.repeat(np.arange(len(objects)), 20)
    # include the extreme corners of the camera factors
    factors = space.sample(len(rows), random_state=2)
    factors[::4, space.names.index("camera_distance")] = 3.0
    factors[1::4, space.names.index("camera_distance")] = 6.0
    factors[::3, space.names.index("camera_elevation")] = -90.0
    factors[1::3, space.names.index("camera_elevation")] = 90.0
    images = render(objects.take(rows), factors, image_size=32)
    bg = np.asarray(BACKGROUND, dtype=np.float32)[:, None]
    border = np.concatenate(
        [images[:, :, 0, :], images[:, :, -1, :], images[:, :, :, 0], images[:, :, :, -1]], axis=2
    )
    assert np.all(border == bg[None])
    foreground = np.any(images != bg[None, :, :, None], axis=1)
    assert foreground.sum(axis=(1, 2)).min() >= 12
    luminance = images.mean(axis=1)
    lit = [luminance[i][foreground[i]].mean() for i in range(len(images))]
    assert min(lit) > 0.05


def test_factors_change_the_image():
    objects = sample_instances(1, classes=["cube"])
    base = render(objects, {})
    for name, value in [("camera_elevation", 70.0), ("camera_roll", 45.0), ("light_energy", 0.3), ("camera_distance", 6.0)]:
        assert not np.array_equal(render(objects, {name: value}), base), name


def test_roll_by_90_degrees_rotates_the_image():
    objects = sample_instances(1, classes=["star", "torus", "cross"])
    factors = {"camera_roll": 0.0, "light_energy": 0.3, "sun_energy": 0.0}
    upright = render(objects, factors, image_size=32)
    rolled = render(objects, {**factors, "camera_roll": 90.0}, image_size=32)
    # lighting is fixed in the world, so the rolled image is the upright one turned clockwise
    agreement = np.mean(np.isclose(np.rot90(upright, k=-1, axes=(2, 3)), rolled, atol=1e-3))
    assert agreement > 0.97


def test_bad_input_is_named():
    objects = sample_instances(1, classes=["sphere"])
    with pytest.raises(InputError, match="factor `camera_elevation` must be in \\[-90, 90\\] deg; got 120"):
        render(objects, {"camera_elevation": 120.0})
    with pytest.raises(InputError, match="`image_size` must be a positive integer; got 0"):
        render(objects, {}, image_size=0)
    with pytest.raises(InputError, match="`image_size` must be an integer"):
        render(objects, {}, image_size=32.5)
    with pytest.raises(InputError, match="one row per instance"):
        render(objects, shapes_factor_space().sample(3, random_state=0))
    with pytest.raises(InputError, match="`classes` holds unknown class 'teapot'"):
        sample_instances(1, classes=["teapot"])
    with pytest.raises(InputError, match="`background` must have values in"):
        render(objects, {}, background=(2.0, 0.0, 0.0))
    with pytest.raises(InputError, match="`instances` must be ShapeInstances"):
        render(np.zeros(3), {})
    wide = FactorSpace([dataclasses.replace(f, high=f.high * 2) if f.name == "camera_distance" else f
                        for f in shapes_factor_space().factors])
    with pytest.raises(InputError, match="`camera_distance` range must satisfy 3 <= low <= high <= 6"):
        render(objects, {}, factor_space=wide)
    narrow = shapes_factor_space().restrict(camera_distance=(4, 5))
    with pytest.raises(InputError, match="factor `camera_distance` must be in \\[4, 5\\]"):
        render(objects, {"camera_distance": 3.5}, factor_space=narrow)


def test_every_class_renders_differently_from_the_others():
    objects = sample_instances(1, world_seed=3)
    images = render(objects, {}, image_size=32)
    silhouettes = np.any(images != np.asarray(BACKGROUND, dtype=np.float32)[:, None, None], axis=1)
    assert len(CLASS_NAMES) >= 10
    for i in range(len(objects)):
        for j in range(i):
            assert np.mean(silhouettes[i] != silhouettes[j]) > 0.01, (CLASS_NAMES[i], CLASS_NAMES[j])


@pytest.mark.parametrize("size, n_renders", [(32, 1500), (64, 300), (17, 200)])
@pytest.mark.slow
def test_same_images_as_the_renderer_before_the_speed_up(size, n_renders):
    """Bit for bit the images of the previous renderer (kept in ``_render_reference``), on random factors
    over the whole world, its corners, every class, shuffled batches of mixed classes."""
    space = shapes_factor_space()
    objects = sample_instances(4, world_seed=size)
    rng = np.random.default_rng(size)
    rows = rng.integers(0, len(objects), n_renders)
    factors = space.sample(n_renders, random_state=size + 1)
    corners = rng.random(factors.shape) < 0.15  # some factors at the ends of their ranges
    factors[corners] = np.where(rng.random(factors.shape) < 0.5, space.lows, space.highs)[corners]
    bg = np.asarray(BACKGROUND, dtype=np.float32)
    fast = render_unchecked(objects.take(rows), factors, size, bg)
    np.testing.assert_array_equal(fast, reference_render(objects.take(rows), factors, size, bg))
    assert np.mean(np.any(fast != bg[:, None, None], axis=1)) > 0.05  # the objects are there


def test_same_images_one_at_a_time_and_in_blocks(monkeypatch):
    render_module = sys.modules["fitaudit.data.shapes.render"]
    objects = sample_instances(2, world_seed=4)
    factors = shapes_factor_space().sample(len(objects), random_state=3)
    bg = np.asarray(BACKGROUND, dtype=np.float32)
    together = render_unchecked(objects, factors, 32, bg)
    monkeypatch.setattr(render_module, "_RAYS_PER_CHUNK", 5 * 32 * 32)  # blocks of 5 renders
    np.testing.assert_array_equal(render_unchecked(objects, factors, 32, bg), together)
    for i in range(len(objects)):
        np.testing.assert_array_equal(render_unchecked(objects.take([i]), factors[[i]], 32, bg), together[[i]])
