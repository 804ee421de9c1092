"""No module of the package over 600 lines unless its docstring says why (issue 47, item 5).

A module that grows past the bound is split by concept; one that must stay
whole says so in a ``Size:`` paragraph of its docstring.
"""

from __future__ import annotations

import ast
from pathlib import Path

import fitaudit

PACKAGE = Path(fitaudit.__file__).parent
MAX_LINES = 600


def oversized(root: Path, max_lines: int = MAX_LINES) -> list[str]:
    """The modules under ``root`` longer than ``max_lines`` whose docstring gives no ``Size:`` reason."""
    found = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) <= max_lines:
            continue
        docstring = ast.get_docstring(ast.parse(text)) or ""
        if not any(line.startswith("Size:") for line in docstring.splitlines()):
            found.append(f"{path.relative_to(root)} ({len(text.splitlines())} lines)")
    return found


def test_no_module_over_the_bound_without_a_reason():
    assert oversized(PACKAGE) == []


def test_the_check_finds_a_planted_long_module_and_accepts_a_stated_reason(tmp_path):
    body = "x = 1\n" * 10
    (tmp_path / "short.py").write_text('"""Short."""\n' + "x = 1\n" * 7)
    (tmp_path / "long.py").write_text('"""Long."""\n' + body)
    (tmp_path / "reasoned.py").write_text('"""Long.\n\nSize: one algorithm, read top to bottom.\n"""\n' + body)
    assert oversized(tmp_path, max_lines=8) == ["long.py (11 lines)"]
