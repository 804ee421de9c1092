"""Label perturbation: exact per-class counts, schemes, reproducibility, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.pmv import flip_labels
from fitaudit.pmv.perturb import check_rates, flip_counts


def test_binary_flips_exact_fraction_of_each_class() -> None:
    y = np.array([0] * 60 + [1] * 40)
    flipped = flip_labels(y, 0.25, random_state=0)
    changed = flipped != y
    # class 0: 0.25 * 60 = 15 flips, class 1: 0.25 * 40 = 10 flips, to the other class
    assert changed[y == 0].sum() == 15
    assert changed[y == 1].sum() == 10
    assert np.all(flipped[changed] == 1 - y[changed])


def test_rounding_is_half_up_per_class() -> None:
    # 0.1 * 15 = 1.5 -> 2 ; 0.1 * 25 = 2.5 -> 3 ; 0.1 * 14 = 1.4 -> 1
    assert flip_counts(np.array([15, 25, 14]), 0.1).tolist() == [2, 3, 1]
    y = np.repeat(["a", "b", "c"], [15, 25, 14])
    flipped = flip_labels(y, 0.1, random_state=3)
    assert [(flipped[y == c] != c).sum() for c in "abc"] == [2, 3, 1]


def test_next_scheme_moves_to_cyclic_next_class() -> None:
    y = np.repeat([3, 7, 9], 20)  # sorted classes 3 -> 7 -> 9 -> 3
    flipped = flip_labels(y, 0.5, scheme="next", random_state=1)
    moved = flipped != y
    expected = {3: 7, 7: 9, 9: 3}
    assert moved.sum() == 30
    assert all(flipped[i] == expected[y[i]] for i in np.flatnonzero(moved))


def test_random_scheme_moves_to_other_classes_uniformly() -> None:
    y = np.repeat(np.arange(4), 2000)
    flipped = flip_labels(y, 0.5, scheme="random", random_state=2)
    moved = flipped != y
    assert moved.sum() == 4000
    targets = flipped[moved & (y == 0)]
    counts = np.bincount(targets, minlength=4)
    assert counts[0] == 0
    # 1000 draws over 3 classes: each near 333 (binomial sd ~ 15)
    assert np.all(np.abs(counts[1:] - 1000 / 3) < 80)


def test_schemes_agree_for_two_classes() -> None:
    y = np.array([0, 1] * 30)
    np.testing.assert_array_equal(
        flip_labels(y, 0.3, scheme="next", random_state=5),
        flip_labels(y, 0.3, scheme="random", random_state=5),
    )


def test_reproducible_with_random_state() -> None:
    y = np.repeat([0, 1, 2], 30)
    a = flip_labels(y, 0.2, random_state=11)
    b = flip_labels(y, 0.2, random_state=11)
    c = flip_labels(y, 0.2, random_state=12)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert a.dtype == y.dtype


@pytest.mark.parametrize("rate", [0.0, -0.1, 0.51, float("nan")])
def test_rate_outside_range(rate: float) -> None:
    with pytest.raises(InputError, match="`rate`"):
        flip_labels(np.array([0, 1] * 20), rate)


def test_rates_list_checks() -> None:
    assert check_rates([0.2, 0.1]).tolist() == [0.1, 0.2]
    with pytest.raises(InputError, match=r"`rates` must be in \(0, 0.5\]; got 0.6"):
        check_rates([0.1, 0.6])
    with pytest.raises(InputError, match="must not repeat"):
        check_rates([0.1, 0.1])
    with pytest.raises(InputError, match="single number"):
        check_rates(0.1)
    with pytest.raises(InputError, match="got the string '0.1'"):
        check_rates("0.1")
    with pytest.raises(InputError, match="at least one"):
        check_rates([])


def test_single_class_is_an_error() -> None:
    with pytest.raises(InputError, match="at least two classes"):
        flip_labels(np.zeros(20, dtype=int), 0.2)


def test_class_too_small_for_a_flip() -> None:
    y = np.array([0] * 50 + [1] * 9)  # 0.05 * 9 = 0.45 rounds to 0 flips
    with pytest.raises(InputError, match=r"class 1 has 9 example\(s\).*at least 10"):
        flip_labels(y, 0.05)
    flip_labels(np.array([0] * 50 + [1] * 10), 0.05)  # 0.5 rounds up to one flip


def test_ragged_labels_are_an_input_error() -> None:
    with pytest.raises(InputError, match="`y` must be array-like"):
        flip_labels([[0, 1], [1]], 0.2)


def test_bad_scheme() -> None:
    with pytest.raises(InputError, match="`scheme` must be one of 'next', 'random'"):
        flip_labels(np.array([0, 1] * 10), 0.2, scheme="swap")


def test_missing_labels_are_not_a_class() -> None:
    with pytest.raises(InputError, match=r"`y` holds 10 missing label\(s\) \(NaN or None\)"):
        flip_labels(np.array([0.0, 1.0, np.nan, 1.0, np.nan, 0.0] * 5), 0.2)
    with pytest.raises(InputError, match=r"`y` holds 5 missing label\(s\)"):
        flip_labels(np.array(["a", "b", None, "a"] * 5, dtype=object), 0.2)
