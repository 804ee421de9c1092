"""Common base of result objects (in the spirit of :mod:`scipy.stats`).

A result is a dataclass. It prints readably, converts to JSON-safe
dictionaries with :meth:`Result.to_dict` and renders as an HTML table in
notebooks. Arrays become lists, numpy scalars become Python numbers, NaN and
infinity become ``None`` (JSON has no NaN). Every subclass is registered by
its class name, so :meth:`Result.from_dict` turns a saved dictionary back into
the result type named by its ``"type"`` key (fields declared as arrays
come back as arrays, NaN in float fields as NaN); :mod:`fitaudit.report`
renders either form.
"""

from __future__ import annotations

import dataclasses
import html
import json
import math
import typing
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


def _revive(value: Any) -> Any:
    """Nested result dictionaries back into results; everything else as it is."""
    if isinstance(value, dict):
        if value.get("type") in RESULT_TYPES:
            return Result.from_dict(value)
        return {k: _revive(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_revive(v) for v in value]
    return value


def _field_types(cls: type) -> dict[str, Any]:
    """The resolved type hints of a result class ({} when they cannot be resolved)."""
    try:
        return typing.get_type_hints(cls)
    except Exception:  # a hint naming something its module does not define
        return {}


def _revive_as(hint: Any, value: Any) -> Any:
    """A JSON value back in the declared type of its field, where that is unambiguous.

    Arrays (``np.ndarray`` fields) come back as arrays, ``None`` in a float
    array or a ``float`` field as NaN (JSON has no NaN), and plain dataclasses
    (e.g. a :class:`~fitaudit.stats.ConfidenceInterval`) from their fields.
    """
    if hint is np.ndarray and isinstance(value, list):
        array = np.asarray(value)
        return np.array(value, dtype=np.float64) if array.dtype == object else array
    if hint is float and value is None:
        return math.nan
    if (
        isinstance(hint, type)
        and dataclasses.is_dataclass(hint)
        and not issubclass(hint, Result)
        and isinstance(value, dict)
    ):
        names = {f.name for f in dataclasses.fields(hint)}
        if names >= set(value):
            hints = _field_types(hint)
            return hint(**{k: _revive_as(hints.get(k), v) for k, v in value.items()})
    return value


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


#: every Result subclass by class name (filled by ``Result.__init_subclass__``)
RESULT_TYPES: dict[str, type[Result]] = {}


@dataclasses.dataclass(repr=False)
class Result:
    """Base class of fitaudit's result objects."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        RESULT_TYPES[cls.__name__] = cls

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        """Rebuild a result from :meth:`to_dict` output, keyed by its ``"type"``.

        Nested dictionaries with a known ``"type"`` become results again;
        fields missing from ``data`` are an error, unknown keys are ignored.
        The module defining the type must have been imported
        (:func:`fitaudit.report.load_result` imports every instrument).
        """
        from fitaudit._errors import InputError

        if not isinstance(data, dict) or "type" not in data:
            raise InputError("`data` must be a dict with a 'type' key (from Result.to_dict()).")
        name = data["type"]
        target = RESULT_TYPES.get(name) if cls is Result else cls
        if target is None or (cls is not Result and name != cls.__name__):
            raise InputError(f"`data['type']` is {name!r}, not a known result type for {cls.__name__}.")
        hints = _field_types(target)
        values = {}
        for field in dataclasses.fields(target):
            if field.name not in data:
                if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
                    raise InputError(f"`data` lacks the field {field.name!r} of {name}.")
                continue
            values[field.name] = _revive_as(hints.get(field.name), _revive(data[field.name]))
        return target(**values)

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


def load_result(data: Any, expected: type[Result] | None = None, *, name: str = "result") -> Result:
    """A result from its :meth:`Result.to_dict` form, of type ``expected`` when given.

    The module defining the type (and those of any nested results) must have
    been imported: a type is known once its class exists. ``name`` is what
    the error messages call ``data`` (an option or a file).

    Raises
    ------
    InputError
        ``data`` is not a saved result, or not of the expected type.
    """
    from fitaudit._errors import InputError

    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise InputError(f"`{name}` must be a saved fitaudit result (a JSON object with a 'type'); got {type(data).__name__}.")
    if expected is not None and data["type"] != expected.__name__:
        raise InputError(f"`{name}` holds a {data['type']!r}, not a {expected.__name__}.")
    return Result.from_dict(data)
