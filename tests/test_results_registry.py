"""The one registry of result types (:func:`fitaudit.results.registered_types`): every type, found from its module."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys

import pytest

import fitaudit
from fitaudit.results import RESULT_MODULES, RESULT_TYPES, registered_types


def _every_module() -> list[str]:
    names = [m.name for m in pkgutil.walk_packages(fitaudit.__path__, "fitaudit.") if not m.name.endswith("__main__")]
    for name in names:
        importlib.import_module(name)
    return names


def test_every_result_type_in_src_is_registered_through_its_module():
    _every_module()
    defined = {name: cls.__module__ for name, cls in RESULT_TYPES.items() if cls.__module__.startswith("fitaudit.")}
    missing = {name: module for name, module in defined.items() if module not in RESULT_MODULES}
    assert not missing, f"result types whose module is not in RESULT_MODULES: {missing}"
    assert set(RESULT_MODULES) <= set(defined.values()), "a module in RESULT_MODULES defines no result type"


@pytest.mark.slow
def test_a_fresh_process_knows_every_type_from_the_registry_alone():
    _every_module()
    expected = sorted(name for name, cls in RESULT_TYPES.items() if cls.__module__.startswith("fitaudit."))
    code = "import json; from fitaudit.results import registered_types; print(json.dumps(sorted(registered_types())))"
    printed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(printed) == expected


def test_a_type_registers_itself_where_it_is_defined():
    from dataclasses import dataclass

    from fitaudit.results import Result, load_result

    @dataclass(repr=False)
    class PlantedResult(Result):
        value: float

    assert registered_types()["PlantedResult"] is PlantedResult
    assert load_result({"type": "PlantedResult", "value": 0.5}) == PlantedResult(0.5)
    del RESULT_TYPES["PlantedResult"]
