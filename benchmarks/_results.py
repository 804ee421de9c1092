"""What the benchmark scripts share: the wall time of one call, and the result table printed and kept in a file.

Imported by the scripts in this folder as ``from _results import emit, timed`` (a script run as
``python benchmarks/bench_x.py`` has this folder on its path).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def timed(call: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[float, Any]:
    """``call(*args, **kwargs)`` and its wall time: ``(seconds, value)`` (``time.perf_counter``)."""
    start = time.perf_counter()
    value = call(*args, **kwargs)
    return time.perf_counter() - start, value


def emit(lines: Sequence[str], path: str | Path | None) -> str:
    """The table's ``lines`` printed and, when ``path`` is given (the script's ``--out``), written there with a
    final newline; returns the text."""
    text = "\n".join(lines)
    print(text)
    if path:
        Path(path).write_text(text + "\n")
    return text
