"""The margin maths of the free-position variant."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.data.shapes.datasets import FreePositionLayout, make_free_position_dataset
from fitaudit.data.shapes.render import BACKGROUND


@pytest.fixture(scope="module")
def data():
    return make_free_position_dataset(1, 4, layout=FreePositionLayout(32, 3, 20), random_state=2)


def test_canvas_crop_and_margin(data):
    layout = data.layout
    assert layout.canvas_size == 38
    assert data.canvases.shape == (len(data), 3, 38, 38)
    np.testing.assert_array_equal(data.images, data.canvases[:, :, 3:35, 3:35])
    assert data.images.shape[-1] == 32
    assert data.canvases.min() >= 0 and data.canvases.max() <= 1


def test_window_shift_equals_moving_the_object_back(data):
    """tau_v(x) = crop at offset P + v = the scene with the object at u - v."""
    layout = data.layout
    # the object tiles, cut out of the canvases at their recorded positions
    rows = data.positions + layout.margin
    tiles = np.stack(
        [c[:, r : r + layout.object_size, k : k + layout.object_size] for c, (r, k) in zip(data.canvases, rows)]
    )
    for v in [(1, 0), (-3, 2), (3, 3), (0, -1)]:
        moved = layout.compose(tiles, data.positions - np.array(v))
        np.testing.assert_array_equal(layout.crop(data.canvases, v), layout.crop(moved))


def test_object_stays_whole_in_every_shifted_window(data):
    bg = np.asarray(BACKGROUND, dtype=np.float32)[None, :, None, None]
    total = np.sum(np.any(data.canvases != bg, axis=1), axis=(1, 2))
    assert total.min() > 0
    m = data.layout.margin
    for v in itertools.product(range(-m, m + 1), repeat=2):
        window = data.layout.crop(data.canvases, v)
        np.testing.assert_array_equal(np.sum(np.any(window != bg, axis=1), axis=(1, 2)), total)


def test_positions_are_uniform_over_the_allowed_box():
    layout = FreePositionLayout(32, 3, 20)
    assert layout.positions_per_axis == 32 - 20 - 6 + 1
    positions = layout.sample_positions(7000, random_state=0)
    assert positions.min() == 3 and positions.max() == 32 - 20 - 3
    counts = np.bincount(positions[:, 0] - 3)
    assert len(counts) == 7 and counts.min() > 850  # 1000 expected per value


def test_g3_violation_matches_enumeration():
    layout = FreePositionLayout(32, 4, 16)
    low, length = layout.margin, layout.positions_per_axis
    grid = np.array(list(itertools.product(range(low, low + length), repeat=2)))
    for v in [(0, 0), (1, 0), (2, -3), (4, 4)]:
        moved = grid - np.array(v)
        outside = np.any((moved < low) | (moved >= low + length), axis=1).mean()
        assert layout.g3_violation(v) == pytest.approx(outside)
    assert layout.g3_violation((0, 0)) == 0.0
    with pytest.raises(InputError, match="`shift` must be an integer <= 4"):
        layout.g3_violation((5, 0))


def test_wrapped_canvas_shifts_are_cyclic_and_keep_the_distribution():
    layout = FreePositionLayout(24, 3, 12, wrap=True)
    data = make_free_position_dataset(1, 1, classes=["cube", "torus"], layout=layout, random_state=4)
    assert layout.g3_violation((3, -2)) == 0.0
    for v in [(1, 2), (-3, 3)]:
        np.testing.assert_array_equal(layout.crop(data.canvases, v), np.roll(data.images, (-v[0], -v[1]), axis=(2, 3)))
    positions = layout.sample_positions(24 * 500, random_state=1)
    assert positions.min() == 0 and positions.max() == 23


def test_canvas_too_small_is_named():
    with pytest.raises(InputError, match="`crop_size` \\(24\\) must be at least `object_size` \\+ 2 \\* `margin` = 26"):
        FreePositionLayout(crop_size=24, margin=3, object_size=20)
    with pytest.raises(InputError, match="`margin` must be an integer >= 0; got -1"):
        FreePositionLayout(margin=-1)
    with pytest.raises(InputError, match="`object_size` must be a positive integer; got 0"):
        FreePositionLayout(object_size=0)
    with pytest.raises(InputError, match="`layout` must be a FreePositionLayout"):
        make_free_position_dataset(1, 1, layout=(32, 3, 20))
