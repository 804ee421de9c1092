"""FactorSpace beyond the Shapes world: unit maps, bins, wrapping, round trips."""

from __future__ import annotations

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.data.factors import Factor, FactorSpace


@pytest.fixture
def space() -> FactorSpace:
    return FactorSpace(
        [
            Factor("azimuth", 0.0, 360.0, 0.0, "deg", periodic=True),
            Factor("energy", 0.3, 1.0, 0.5, "x"),
            Factor("fixed", 2.0, 2.0, 2.0, "x"),
        ]
    )


def test_unit_maps_are_inverse(space):
    points = space.sample(50, random_state=0)
    unit = space.to_unit(points)
    assert unit.min() >= 0 and unit.max() <= 1
    assert np.all(unit[:, 2] == 0)  # a degenerate factor maps to 0
    np.testing.assert_allclose(space.from_unit(unit), points)


def test_bins_cover_the_range_and_round_trip(space):
    centres = space.bin_centres(100)
    assert centres.shape == (3, 100)
    np.testing.assert_allclose(centres[0, :2], [1.8, 5.4])  # 360 / 100 wide bins, centred
    indices = np.array([[0, 99, 50], [42, 0, 0]])
    values = space.from_bins(indices, 100)
    np.testing.assert_array_equal(space.to_bins(values, 100)[:, :2], indices[:, :2])
    # the upper end of the range falls in the last bin
    assert space.to_bins(np.array([[360.0, 1.0, 2.0]]), 100).tolist() == [[99, 99, 0]]


def test_from_bins_rejects_bad_indices(space):
    with pytest.raises(InputError, match=r"`indices` must lie in \[0, 9\]"):
        space.from_bins(np.array([[0, 10, 0]]), 10)
    with pytest.raises(InputError, match="`indices` must be an integer array of shape"):
        space.from_bins(np.zeros((1, 3)), 10)


def test_wrap_wraps_periodic_and_clips_the_rest(space):
    wrapped = space.wrap(np.array([[370.0, 1.7, 2.0], [-10.0, 0.0, 5.0]]))
    np.testing.assert_allclose(wrapped, [[10.0, 1.0, 2.0], [350.0, 0.3, 2.0]])


def test_dict_round_trip(space):
    assert FactorSpace.from_dict(space.to_dict()) == space


def test_inverted_and_empty_ranges_are_errors():
    with pytest.raises(InputError, match="factor `bad` needs finite bounds low <= high; got"):
        Factor("bad", 1.0, 0.0, 0.5, "x")
    with pytest.raises(InputError, match="`factors` must hold at least one factor"):
        FactorSpace([])
