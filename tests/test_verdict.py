"""The verdict contract (fitaudit.verdict): statuses, validation and the JSON round trip."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from fitaudit._errors import InputError
from fitaudit.verdict import STATUSES, Verdict, inconclusive, skipped


def test_round_trip_through_json_keeps_every_field():
    verdict = Verdict("fail", "pvalue_below_level", {"pvalue": np.float64(0.003), "level": 0.05,
                                                     "n": np.int64(40), "note": "x", "flags": [1, 2.5]})
    back = Verdict.from_dict(json.loads(json.dumps(verdict.to_dict())))
    assert back == verdict
    assert back.numbers == {"pvalue": 0.003, "level": 0.05, "n": 40, "note": "x", "flags": [1, 2.5]}
    assert isinstance(back.numbers["n"], int)


def test_non_finite_numbers_become_none():
    verdict = Verdict("info", "measured", {"a": math.nan, "b": np.inf})
    assert verdict.numbers == {"a": None, "b": None}


@pytest.mark.parametrize("status", STATUSES)
def test_only_pass_and_fail_are_conclusive(status):
    verdict = Verdict(status, "some_reason")
    assert verdict.conclusive == (status in ("pass", "fail"))
    assert verdict.failed == (status == "fail")


def test_helpers_build_their_status():
    assert inconclusive("g3_violated", accuracy=0.97) == Verdict("inconclusive", "g3_violated", {"accuracy": 0.97})
    assert skipped("no_model").status == "skipped"


@pytest.mark.parametrize("kwargs, message", [
    ({"status": "ok", "reason": "x"}, "`status` must be one of"),
    ({"status": "pass", "reason": "Not Snake"}, "`reason` must be a snake_case code"),
    ({"status": "pass", "reason": "x", "numbers": [1]}, "`numbers` must be a mapping"),
    ({"status": "pass", "reason": "x", "numbers": {"a": object()}}, "verdict number `a`"),
])
def test_bad_verdicts_are_refused_naming_the_field(kwargs, message):
    with pytest.raises(InputError, match=message):
        Verdict(**kwargs)


@pytest.mark.parametrize("data, message", [
    ([], "must be a JSON object"),
    ({"status": "pass"}, "needs 'reason'"),
    ({"status": "maybe", "reason": "x"}, "`status` must be one of"),
])
def test_a_bad_saved_verdict_is_refused(data, message):
    with pytest.raises(InputError, match=message):
        Verdict.from_dict(data)
