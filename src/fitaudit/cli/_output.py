"""What a command prints: its result as JSON (with the verdict first) or its summary, with control characters escaped."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import Any

from fitaudit.results import Result, to_jsonable


def emit(result: Any, *, as_json: bool, summary: Callable[[Any], str] | None = None) -> None:
    """Print a handler's result: ``to_dict()`` as JSON, or the command's summary text."""
    if result is None:
        return
    if as_json:
        json.dump(with_verdict(result, summary), sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif summary is not None:
        print(printable(summary(result)))
    else:
        print(printable(repr(result)) if isinstance(result, Result) else json.dumps(to_jsonable(result), indent=2))


def with_verdict(result: Any, summary: Callable[[Any], str] | None = None) -> Any:
    """The JSON form of a command's result with its verdict first (kept when the form has one already)."""
    from fitaudit.report.verdicts import verdict_json

    data = to_jsonable(result)
    if isinstance(data, dict) and "verdict" not in data:
        return {"verdict": verdict_json(result, summary), **data}
    if not isinstance(data, dict):  # a listing: the verdict beside it
        return {"verdict": verdict_json(result, summary), "result": data}
    return data


#: control characters that a terminal would act on (ESC sequences, carriage return, bell), newline and tab aside
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with every control character a terminal would act on written as an escape (``\\x1b``):
    a file or class name cannot move the cursor, recolour or rewrite the screen."""
    return _CONTROL.sub(lambda found: found.group(0).encode("unicode_escape").decode("ascii"), text)
