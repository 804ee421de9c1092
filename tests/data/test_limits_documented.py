"""docs/security.md states every `--limit` bound with its default, as the code has them."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from fitaudit.data.limits import OPTION_NAMES, Limits

PAGE = Path(__file__).resolve().parents[2] / "docs" / "security.md"

_UNITS = {"GiB": 2**30, "MiB": 2**20}


def _value(text: str) -> int:
    number, _, unit = text.partition(" ")
    return int(float(number.replace(",", "")) * _UNITS.get(unit, 1))


def test_every_limit_is_documented_with_its_default():
    rows = dict(re.findall(r"^\| `([a-z-]+)` \| ([0-9.,]+(?: [GM]iB)?) \|", PAGE.read_text(), flags=re.M))
    defaults = {field.name: field.default for field in dataclasses.fields(Limits)}
    assert set(rows) == set(OPTION_NAMES)
    assert {name: _value(text) for name, text in rows.items()} == {name: defaults[OPTION_NAMES[name]]
                                                                    for name in rows}
