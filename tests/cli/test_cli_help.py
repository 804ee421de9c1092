"""Issue 51, item 5: every command's ``--help`` ends with runnable examples, and shared options read the same.

The examples are checked by parsing each one with the command line's own
parser (a misspelt option or a missing required one fails here), and the
help of ``--data``, ``--images``, ``--label``, ``--device`` and ``--out`` is
compared across every command that takes it, up to the command's own
parenthesis (its default, or what it writes).
"""

from __future__ import annotations

import argparse
import re
import shlex

import pytest

from fitaudit.cli import build_parser
from fitaudit.cli._common import EXAMPLES_HEADING, SHARED_HELP


def _parsers(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield from _parsers(child)


PARSERS = {parser.prog: parser for parser in _parsers(build_parser())}


def _examples(parser: argparse.ArgumentParser) -> list[str]:
    text = parser.format_help()
    assert EXAMPLES_HEADING in text, f"`{parser.prog} --help` has no examples"
    section = text.split("\n" + EXAMPLES_HEADING + "\n", 1)[1]
    return [line.strip() for line in section.splitlines() if line.strip()]


def test_every_command_is_covered():
    assert len(PARSERS) > 20 and "fitaudit pgdl zoo build" in PARSERS and "fitaudit audit" in PARSERS


@pytest.mark.parametrize("prog", sorted(PARSERS))
def test_help_ends_with_examples_of_that_command(prog):
    lines = _examples(PARSERS[prog])
    assert 2 <= len(lines) <= 3, lines
    for line in lines:
        assert line == prog or line.startswith(prog + " "), (prog, line)


@pytest.mark.parametrize("prog", sorted(PARSERS))
def test_every_example_parses(prog):
    parser = build_parser()
    for line in _examples(PARSERS[prog]):
        words = shlex.split(line)[1:]
        if words[-1:] == ["--help"]:
            continue
        try:
            parser.parse_args(words)
        except SystemExit as exc:  # a usage error: the example does not run
            pytest.fail(f"{line!r} does not parse (exit {exc.code})")


def test_description_is_still_wrapped():
    text = PARSERS["fitaudit audit"].format_help()
    assert max(len(line) for line in text.split(EXAMPLES_HEADING)[0].splitlines()) <= 100


@pytest.mark.parametrize("option", sorted(SHARED_HELP))
def test_shared_options_read_the_same_everywhere(option):
    texts = {}
    for prog, parser in PARSERS.items():
        for action in parser._actions:
            if option in action.option_strings:
                texts[prog] = re.sub(r" \([^()]*(\([^()]*\)[^()]*)*\)$", "", action.help or "")
    assert len(texts) >= 4, texts  # an option many commands take
    assert set(texts.values()) == {SHARED_HELP[option]}, texts
