"""Common base of result objects (in the spirit of :mod:`scipy.stats`).

A result is a dataclass. It prints readably, converts to JSON-safe
dictionaries with :meth:`Result.to_dict` and renders as an HTML table in
notebooks. Arrays become lists, numpy scalars become Python numbers, NaN and
infinity become ``None`` (JSON has no NaN).
"""

from __future__ import annotations

import dataclasses
import html
import json
import math
from typing import Any

import numpy as np


def to_jsonable(value: Any) -> Any:
    """Convert ``value`` recursively into JSON-safe Python objects."""
    if isinstance(value, Result):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer, int)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        value = float(value)
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, str):
        return value
    return str(value)


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, np.ndarray):
        if value.size <= 6:
            return np.array2string(value, precision=4, separator=", ")
        return f"array(shape={value.shape}, dtype={value.dtype})"
    if isinstance(value, (list, tuple)) and len(value) > 6:
        return f"[{len(value)} items]"
    if isinstance(value, Result):
        return f"{type(value).__name__}(...)"
    return repr(value)


@dataclasses.dataclass(repr=False)
class Result:
    """Base class of fitaudit's result objects."""

    def _summary_fields(self) -> list[str]:
        """Names shown by ``repr`` (override to hide bulky fields)."""
        return [f.name for f in dataclasses.fields(self) if f.repr]

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe dictionary of every field, with the result type."""
        data = {f.name: to_jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}
        return {"type": type(self).__name__, **data}

    def to_json(self, **kwargs: Any) -> str:
        """Serialise :meth:`to_dict` as JSON text."""
        return json.dumps(self.to_dict(), **kwargs)

    def __repr__(self) -> str:
        parts = [f"{name}={_short(getattr(self, name))}" for name in self._summary_fields()]
        return f"{type(self).__name__}({', '.join(parts)})"

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(name)}</th>"
            f"<td>{html.escape(_short(getattr(self, name)))}</td></tr>"
            for name in self._summary_fields()
        )
        return f"<table><caption>{html.escape(type(self).__name__)}</caption>{rows}</table>"
