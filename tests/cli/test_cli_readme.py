"""Every command the README's "Command line" section shows parses; the cheap ones run."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from fitaudit.cli import build_parser, main

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_commands() -> list[str]:
    """The ``fitaudit ...`` lines of the first code block after ``## Command line``, comments dropped."""
    text = README.read_text()
    section = text[text.index("## Command line") :]
    block = re.search(r"```\n(.*?)```", section, re.S)
    assert block is not None, "the Command line section has no code block"
    lines = [line.split("  #")[0].strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line.startswith("fitaudit ")]


def test_the_readme_lists_commands_of_every_instrument() -> None:
    commands = readme_commands()
    for command in ("inspect", "overfit", "pmv", "shapes", "reproduce"):
        assert any(line.split()[1] == command for line in commands), command


@pytest.mark.parametrize("line", readme_commands())
def test_readme_command_parses(line: str) -> None:
    argv = shlex.split(line.replace("[", "").replace("]", ""))[1:]
    args = build_parser().parse_args(argv)  # a usage error would exit
    assert callable(args.handler)


CHEAP = [
    "fitaudit pmv --dataset moons --estimator decision_tree --param max_depth=None",
    "fitaudit pmv --list",
    "fitaudit shapes render --class torus --factor camera_elevation=60 --out torus.png",
]


@pytest.mark.parametrize("line", CHEAP)
def test_cheap_readme_commands_run(line: str, tmp_path, monkeypatch, capsys) -> None:
    assert line in readme_commands()
    monkeypatch.chdir(tmp_path)
    assert main([*shlex.split(line)[1:], "--quiet"]) == 0
    out = capsys.readouterr().out
    assert out.strip() and "Result(" not in out
