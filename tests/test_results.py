"""Result objects: repr, to_dict, JSON, HTML and from_dict."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.results import Result, load_result, to_jsonable


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


def test_from_dict_rebuilds_nested_results():
    data = make_outcome().to_dict()
    again = Result.from_dict(json.loads(json.dumps(data)))
    assert type(again) is Outcome and isinstance(again.inner, Inner)
    assert again.inner.value == 0.5
    assert isinstance(again.counts, np.ndarray) and again.counts.tolist() == [1, 2, 3]
    assert again.counts.dtype.kind == "i" and np.isnan(again.statistic)
    assert again.to_dict() == data
    assert Outcome.from_dict(data).label == "a<b>"


@dataclasses.dataclass
class Interval:
    low: float
    high: float


@dataclasses.dataclass(repr=False)
class WithArrays(Result):
    values: np.ndarray
    interval: Interval
    maybe: float | None = None


def test_from_dict_gives_arrays_nan_and_plain_dataclasses_back():
    result = WithArrays(values=np.array([0.5, np.nan, 2.0]), interval=Interval(0.0, 1.0))
    again = Result.from_dict(json.loads(result.to_json()))
    np.testing.assert_array_equal(again.values, [0.5, np.nan, 2.0])
    assert again.values.dtype == np.float64
    assert again.interval == Interval(0.0, 1.0) and again.maybe is None


def test_from_dict_errors():
    with pytest.raises(InputError, match="`data` must be a dict with a 'type' key"):
        Result.from_dict({"statistic": 1.0})
    with pytest.raises(InputError, match="`data\\['type'\\]` is 'Nope', not a known result type"):
        Result.from_dict({"type": "Nope"})
    with pytest.raises(InputError, match="`data` lacks the field 'value' of Inner"):
        Result.from_dict({"type": "Inner"})
    with pytest.raises(InputError, match="not a known result type for Inner"):
        Inner.from_dict(make_outcome().to_dict())


@dataclasses.dataclass(repr=False)
class Curve(Result):
    ALIGNED = (("rates", "accuracy"),)

    rates: np.ndarray
    accuracy: np.ndarray
    name: str
    count: int
    flag: bool = False
    parts: list[Inner] = dataclasses.field(default_factory=list)


def _curve() -> dict:
    return Curve(rates=np.array([0.0, 0.1, 0.2]), accuracy=np.array([1.0, 0.9, 0.8]), name="c", count=3,
                 parts=[Inner(value=1.0), Inner(value=2.0)]).to_dict()


def test_load_result_rebuilds_what_to_dict_wrote():
    again = load_result(json.loads(json.dumps(_curve())), Curve, name="curve.json")
    assert isinstance(again, Curve) and again.parts[1].value == 2.0 and again.accuracy.tolist() == [1.0, 0.9, 0.8]
    assert load_result(make_outcome().to_dict()).to_dict() == make_outcome().to_dict()


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(type="Inner"), "`curve.json`: field `type` must be 'Curve'; got str 'Inner'"),
    (lambda d: d.update(type="Banana"), "field `type` must be 'Curve'; got str 'Banana'"),
    (lambda d: d.pop("name"), "field `name` is missing \\(a Curve needs it\\)"),
    (lambda d: d.update(count="3"), "field `count` must be an integer; got str '3'"),
    (lambda d: d.update(count=3.5), "field `count` must be an integer; got float 3.5"),
    (lambda d: d.update(flag="yes"), "field `flag` must be true or false"),
    (lambda d: d.update(name=7), "field `name` must be text; got int 7"),
    (lambda d: d.update(rates=["0", "0.1", "0.2"]), "field `rates` must be an array of numbers"),
    (lambda d: d.update(rates=[[0.0], [0.1, 0.2]]), "field `rates` must be an array of numbers with rows of one length"),
    (lambda d: d["parts"][1].update(value="2.0"), "field `parts\\[1\\].value` must be a number; got str '2.0'"),
    (lambda d: d["parts"][0].update(type="Nope"), "field `parts\\[0\\].type` must be 'Inner'; got str 'Nope'"),
    (lambda d: d.update(accuracy=[1.0, 0.9]), "must have one length each .*`rates` 3, `accuracy` 2"),
])
def test_load_result_names_the_field_that_is_wrong(edit, message):
    data = _curve()
    edit(data)
    with pytest.raises(InputError, match=message) as caught:
        load_result(data, Curve, name="curve.json")
    assert "\n" not in str(caught.value)


def test_load_result_refuses_what_is_not_a_result():
    for data in ([1, 2], {"statistic": 1.0}, {"type": 3}):
        with pytest.raises(InputError, match="`curve.json` must be a saved fitaudit result"):
            load_result(data, Curve, name="curve.json")
    # a NaN saved as null is a number; a float field holding an int is fine
    assert np.isnan(load_result({"type": "Inner", "value": None}).value)
    assert load_result({"type": "Inner", "value": 2}).value == 2


@pytest.mark.parametrize("value", [7.0, -0.5, 2])
def test_load_result_refuses_a_probability_outside_the_unit_interval(value):
    """An edited audit.json with p = 7 was rendered into a report as if it were a result."""
    data = make_outcome().to_dict()
    data["pvalue"] = value
    with pytest.raises(InputError, match=rf"`saved.json`: field `pvalue` must be in \[0, 1\]; got (float|int) {value}"):
        load_result(data, name="saved.json")
    data["pvalue"] = float("nan")  # a test that could not be computed: kept as it was saved
    assert np.isnan(load_result(data).pvalue)
