from __future__ import annotations

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.data.shapes import FactorSpace, shapes_factor_space


def test_world_has_the_papers_factors_with_ranges():
    space = shapes_factor_space()
    for name in (
        "object_rotation",
        "camera_distance",
        "camera_azimuth",
        "camera_elevation",
        "camera_roll",
        "light_energy",
        "light_distance",
        "light_azimuth",
        "light_elevation",
        "sun_energy",
        "ambient_energy",
    ):
        assert name in space.names
    assert (space["camera_elevation"].low, space["camera_elevation"].high) == (-90.0, 90.0)
    assert (space["light_energy"].low, space["light_energy"].high) == (0.3, 1.0)
    assert np.all(space.lows <= space.defaults) and np.all(space.defaults <= space.highs)
    assert len(space) >= 9


def test_sample_respects_ranges_and_seed():
    space = shapes_factor_space().restrict(camera_elevation=(-30, 30), light_energy=(0.5, 0.6))
    a = space.sample(2000, random_state=3)
    b = space.sample(2000, random_state=3)
    np.testing.assert_array_equal(a, b)
    assert np.all(a >= space.lows) and np.all(a <= space.highs)
    elevation = a[:, space.names.index("camera_elevation")]
    assert elevation.min() >= -30 and elevation.max() <= 30
    # uniform: both halves of the range are used
    assert (elevation < 0).mean() == pytest.approx(0.5, abs=0.05)


def test_restrict_rejects_widening_and_unknown_names():
    space = shapes_factor_space()
    with pytest.raises(InputError, match="`camera_elevation` range must satisfy -90 <= low"):
        space.restrict(camera_elevation=(-100, 30))
    with pytest.raises(InputError, match="unknown factor"):
        space.restrict(zoom=(0, 1))
    with pytest.raises(InputError, match="`camera_distance` must be a \\(low, high\\) pair"):
        space.restrict(camera_distance=3)
    narrowed = space.restrict(camera_elevation=(40, 60))
    assert narrowed["camera_elevation"].default == 40  # default moved inside


def test_validate_names_the_offending_factor():
    space = shapes_factor_space()
    values = np.tile(space.defaults, (3, 1))
    values[1, space.names.index("camera_distance")] = 10.0
    with pytest.raises(InputError, match="factor `camera_distance` must be in \\[3, 6\\] radii; got 10"):
        space.validate(values)
    with pytest.raises(InputError, match="must have 13 columns"):
        space.validate(values[:, :5])
    with pytest.raises(InputError, match="finite"):
        space.validate(np.full((1, 13), np.nan))


def test_to_array_fills_defaults_and_broadcasts():
    space = shapes_factor_space()
    out = space.to_array({"camera_elevation": [-90, 0, 90], "light_energy": 0.5})
    assert out.shape == (3, len(space))
    np.testing.assert_array_equal(out[:, space.names.index("camera_elevation")], [-90, 0, 90])
    assert np.all(out[:, space.names.index("light_energy")] == 0.5)
    np.testing.assert_array_equal(out[:, space.names.index("camera_roll")], space["camera_roll"].default)
    with pytest.raises(InputError, match="unknown factor"):
        space.to_array({"focal_length": 3})
    with pytest.raises(InputError, match="factor `camera_elevation` must be in"):
        space.to_array({"camera_elevation": 91})


def test_from_unit_maps_the_cube_onto_the_box():
    space = shapes_factor_space()
    corners = space.from_unit(np.stack([np.zeros(len(space)), np.ones(len(space))]))
    np.testing.assert_allclose(corners, np.stack([space.lows, space.highs]))
    with pytest.raises(InputError, match="`unit` must have values in \\[0, 1\\]"):
        space.from_unit(np.full((1, len(space)), 1.5))


def test_duplicate_factor_names_rejected():
    factor = shapes_factor_space().factors[0]
    with pytest.raises(InputError, match="distinct names"):
        FactorSpace([factor, factor])
