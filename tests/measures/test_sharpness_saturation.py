"""Saturation values: what a bounded search (sharpness, PAC-Bayes flatness) returns when nothing costs 0.1 accuracy."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from fitaudit.measures import _torch as T  # noqa: E402
from fitaudit.measures import get_measure  # noqa: E402
from fitaudit.measures._ascent import AscentSettings, search_bound  # noqa: E402


@pytest.mark.parametrize("upper, depth", [(0.5, 20), (2.0, 20), (2.0, 3)])
def test_search_bound_is_where_a_search_that_never_reaches_its_target_ends(upper: float, depth: int) -> None:
    never = T.bisect_sigma(lambda a: 0.0, lower=0.0, upper=upper, steps=depth, target=0.1, tolerance=1e-2)
    assert search_bound(AscentSettings(upper=upper, search_depth=depth)) == never


def test_saturation_values() -> None:
    assert get_measure("sharpness").saturation_value(60) == pytest.approx(2.000001907, abs=1e-9)
    top = 2.0 * (1 - 2.0**-20)
    for name in ("sharpness_flatness", "sharpness_mag_flatness"):
        assert get_measure(name).saturation_value(50) == pytest.approx(np.sqrt(1 / top**2 / 50), rel=1e-12)
    assert get_measure("sharpness", search_depth=3).saturation_value(1) == pytest.approx(1 / (0.5 * (1 - 2.0**-3)))
    assert get_measure("weight_norm").saturation_value(50) is None
    never = T.bisect_sigma(lambda s: 0.0, lower=0.0, upper=2.0, steps=15, target=0.1, tolerance=0.01)
    for name in ("pacbayes_flatness", "pacbayes_mag_flatness"):  # the noise search on [0, 2], 15 steps
        assert get_measure(name).saturation_value(200) == pytest.approx(np.sqrt(1 / never**2 / 200), rel=1e-12)
    assert get_measure("pacbayes_flatness").saturation_value(200) == pytest.approx(0.0353564, abs=1e-7)
