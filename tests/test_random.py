"""The seed convention: check_random_state and spawn_seeds."""

from __future__ import annotations

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.random import as_seed, check_random_state, spawn_seeds


def test_check_random_state_conventions():
    a = check_random_state(42).random(5)
    np.testing.assert_array_equal(a, check_random_state(42).random(5))
    np.testing.assert_array_equal(a, np.random.default_rng(42).random(5))
    gen = np.random.default_rng(1)
    assert check_random_state(gen) is gen
    seq = np.random.SeedSequence(3)
    np.testing.assert_array_equal(check_random_state(seq).random(2), np.random.default_rng(3).random(2))
    assert check_random_state(np.int64(5)).random() == np.random.default_rng(5).random()
    assert isinstance(check_random_state(None), np.random.Generator)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-1, "`random_state` must be a non-negative integer seed; got -1"),
        (True, "`random_state` must be None, a non-negative int, a SeedSequence or a Generator; got bool"),
        (1.5, "got float"),
        (np.random.RandomState(0), "got RandomState"),
    ],
)
def test_check_random_state_errors(value, message):
    with pytest.raises(InputError, match=message):
        check_random_state(value)


def test_spawn_seeds():
    seeds = spawn_seeds(11, 50)
    assert seeds == spawn_seeds(11, 50)
    assert seeds[:10] == spawn_seeds(11, 10)
    assert seeds != spawn_seeds(12, 50)
    assert len(set(seeds)) == 50 and all(type(s) is int and 0 <= s < 2**31 - 1 for s in seeds)
    assert spawn_seeds(0, 0) == []
    with pytest.raises(InputError, match="`n` must be an integer >= 0; got -2"):
        spawn_seeds(0, -2)


def test_as_seed_keeps_ints_and_draws_from_generators():
    assert as_seed(7) == 7 and type(as_seed(np.int64(7))) is int
    drawn = as_seed(np.random.default_rng(3))
    assert drawn == int(np.random.default_rng(3).integers(0, 2**31 - 1))  # reproducible from the Generator
    gen = np.random.default_rng(3)
    assert as_seed(gen) == drawn and as_seed(gen) != drawn  # the Generator advances
    assert as_seed(np.random.SeedSequence(4)) == as_seed(np.random.SeedSequence(4))
    assert 0 <= as_seed(None) < 2**31 - 1
    with pytest.raises(InputError, match="`seed` must be a non-negative integer seed; got -3"):
        as_seed(-3, "seed")
    with pytest.raises(InputError, match="got str"):
        as_seed("1")
