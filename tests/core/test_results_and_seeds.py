"""Result objects (repr, to_dict, JSON, HTML) and the seed convention."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.random import check_random_state, spawn_seeds
from fitaudit.results import Result, to_jsonable


@dataclasses.dataclass(repr=False)
class Inner(Result):
    value: float


@dataclasses.dataclass(repr=False)
class Outcome(Result):
    statistic: float
    pvalue: np.float64
    counts: np.ndarray
    label: str = "a<b>"
    extra: dict = dataclasses.field(default_factory=dict)
    inner: Inner | None = None
    bulky: list = dataclasses.field(default_factory=list, repr=False)


def make_outcome() -> Outcome:
    return Outcome(
        statistic=float("nan"),
        pvalue=np.float64(0.0123456789),
        counts=np.array([1, 2, 3], dtype=np.int32),
        extra={1: np.inf, "flag": np.bool_(True), "pair": (np.int64(4), 2.5)},
        inner=Inner(value=np.float32(0.5)),
        bulky=list(range(100)),
    )


def test_to_dict_is_json_safe():
    data = make_outcome().to_dict()
    text = json.dumps(data, allow_nan=False)
    assert json.loads(text) == {
        "type": "Outcome",
        "statistic": None,
        "pvalue": 0.0123456789,
        "counts": [1, 2, 3],
        "label": "a<b>",
        "extra": {"1": None, "flag": True, "pair": [4, 2.5]},
        "inner": {"type": "Inner", "value": 0.5},
        "bulky": list(range(100)),
    }
    assert isinstance(data["counts"][0], int) and type(data["extra"]["flag"]) is bool
    assert json.loads(make_outcome().to_json()) == data


def test_to_jsonable_of_plain_values():
    assert to_jsonable(np.array([[1.5, np.nan]])) == [[1.5, None]]
    assert to_jsonable({"k": [np.float32(2.0)]}) == {"k": [2.0]}
    assert to_jsonable(Inner(value=1.0)) == {"type": "Inner", "value": 1.0}
    assert to_jsonable(None) is None


def test_repr_is_short_and_readable():
    text = repr(make_outcome())
    assert text.startswith("Outcome(statistic=nan, pvalue=0.0123457, counts=[1, 2, 3]")
    assert "inner=Inner(...)" in text and "bulky" not in text
    big = Outcome(statistic=1.0, pvalue=np.float64(0.5), counts=np.zeros((10, 10)))
    assert "counts=array(shape=(10, 10), dtype=float64)" in repr(big)


def test_repr_html_escapes():
    html = make_outcome()._repr_html_()
    assert html.startswith("<table><caption>Outcome</caption>")
    assert "a&lt;b&gt;" in html and "<b>" not in html
    assert html.count("<tr>") == 6


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
