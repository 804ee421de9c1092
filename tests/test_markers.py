"""The `slow` marker is registered, and every marker the tests use is (pytest runs with --strict-markers).

README.md's fast command, ``python -m pytest -q -m "not slow"``, leaves out
the tests marked slow; a misspelt marker would otherwise select nothing
silently.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

#: pytest's own markers (``pytest --markers``)
BUILTIN = {"filterwarnings", "parametrize", "skip", "skipif", "usefixtures", "xfail", "timeout"}


def registered(config: pytest.Config) -> set[str]:
    return {line.split(":", 1)[0].split("(", 1)[0].strip() for line in config.getini("markers")}


def test_slow_is_registered_and_markers_are_strict(pytestconfig: pytest.Config):
    assert "slow" in registered(pytestconfig)
    assert pytestconfig.getoption("strict_markers") or "--strict-markers" in pytestconfig.getini("addopts")


def test_every_marker_used_in_the_tests_is_registered(pytestconfig: pytest.Config):
    used = {name for path in TESTS.rglob("*.py")
            for name in re.findall(r"pytest\.mark\.([a-z_]+)", path.read_text())}
    assert "slow" in used
    assert used - BUILTIN - registered(pytestconfig) == set()


def test_readme_shows_the_full_and_the_fast_command_and_ci_runs_the_full_one():
    readme = (ROOT / "README.md").read_text()
    assert "&& python -m pytest -q\n" in readme and 'python -m pytest -q -m "not slow"\n' in readme
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if "pytest" in line and not line.startswith("#")]
    assert ci and all(" -m " not in line.split("pytest", 1)[1] for line in ci), ci
