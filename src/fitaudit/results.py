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
import functools
import html
import importlib
import json
import math
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np

from fitaudit._errors import InputError


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
        if value.get("type") in registered_types():
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
    optional = [a for a in typing.get_args(hint) if a is not type(None)]
    if value is not None and len(optional) == 1 and len(typing.get_args(hint)) == 2:  # X | None
        hint = optional[0]
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


#: the modules that define result types: :func:`registered_types` imports them, and each
#: type registers itself there when its class is defined (``Result.__init_subclass__``).
#: A new result type is a ``Result`` subclass in its own module, and that module listed here
#: (``tests/test_results_registry.py`` finds every subclass in src/ and checks its module is).
RESULT_MODULES = (
    "fitaudit.stats.binomial", "fitaudit.stats.agreement", "fitaudit.baseline.result", "fitaudit.calibration.result",
    "fitaudit.slices.result", "fitaudit.labels.result", "fitaudit.leakage.result",
    "fitaudit.overfit.g3", "fitaudit.overfit.images", "fitaudit.overfit.independence", "fitaudit.overfit.nmodel",
    "fitaudit.overfit.one_model", "fitaudit.overfit.runs",
    "fitaudit.examine.result", "fitaudit.examine.weakness", "fitaudit.examine.embedding",
    "fitaudit.pgdl.conditional_mi", "fitaudit.pgdl.granulated", "fitaudit.pgdl.harness", "fitaudit.pgdl.leaderboard",
    "fitaudit.pmv.compare", "fitaudit.pmv.heldout", "fitaudit.pmv.score",
    "fitaudit.models.inspection", "fitaudit.models.training",
    "fitaudit.auditing.result", "fitaudit.demo.answers",
    "fitaudit.experiments.examine._run", "fitaudit.experiments.examine.images",
    "fitaudit.experiments.overfit.imagefolder", "fitaudit.experiments.overfit.shapes",
    "fitaudit.experiments.overfit.synthetic", "fitaudit.experiments.pmv.comparison",
    "fitaudit.experiments.pmv.mlp_width", "fitaudit.experiments.pmv.tree_depth",
)

#: the one registry of result types: every Result subclass by class name, filled as each class
#: is defined. Read it through :func:`registered_types`, which imports :data:`RESULT_MODULES` first.
RESULT_TYPES: dict[str, type[Result]] = {}


#: richer notebook views, by result type name, registered by the layer that draws them (the
#: report layer registers the audit's page when it is imported): results never import it
NOTEBOOK_VIEWS: dict[str, Callable[[Result], str]] = {}


@functools.cache
def _import_result_modules() -> None:
    for module in RESULT_MODULES:
        importlib.import_module(module)


def registered_types() -> Mapping[str, type[Result]]:
    """Every result type by class name: the registry after :data:`RESULT_MODULES` are imported.

    A saved file names its type (its ``"type"``); :func:`load_result` reads
    it back as the type registered under that name, and refuses names that
    are not registered (a file cannot make fitaudit import anything).
    """
    _import_result_modules()
    return RESULT_TYPES


@dataclasses.dataclass(repr=False)
class Result:
    """Base class of fitaudit's result objects.

    ``ALIGNED`` names groups of array fields that hold one value per point
    and so must have one length (e.g. noise rates and accuracies):
    :func:`load_result` refuses a saved result where they differ.
    """

    ALIGNED: ClassVar[tuple[tuple[str, ...], ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        RESULT_TYPES[cls.__name__] = cls

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        """Rebuild a result from :meth:`to_dict` output, keyed by its ``"type"``.

        Nested dictionaries with a known ``"type"`` become results again;
        fields missing from ``data`` are an error, unknown keys are ignored.
        The type must be registered (:func:`registered_types`). Data from a
        file goes through :func:`load_result`, which checks it first.
        """
        if not isinstance(data, dict) or "type" not in data:
            raise InputError("`data` must be a dict with a 'type' key (from Result.to_dict()).")
        name = data["type"]
        target = registered_types().get(name) if cls is Result else cls
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

    def contradiction(self) -> str | None:
        """Why the fields contradict each other (``None`` when they agree); checked on every load.

        A result type whose fields repeat one another or follow from its
        evidence (a decision from its p-value, an accuracy from its counts, a
        score from its curve) says here, in one phrase naming the fields,
        where a saved copy disagrees with what its evidence gives:
        :func:`load_result` refuses such a file instead of drawing a page
        that contradicts itself.
        """
        return None

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
        """The notebook view: the one a layer above registered for the type (:data:`NOTEBOOK_VIEWS`), else a table."""
        for cls in type(self).__mro__:
            view = NOTEBOOK_VIEWS.get(cls.__name__)
            if view is not None:
                return view(self)
        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(name)}</th>"
            f"<td>{html.escape(_short(getattr(self, name)))}</td></tr>"
            for name in self._summary_fields()
        )
        return f"<table><caption>{html.escape(type(self).__name__)}</caption>{rows}</table>"


def _shown(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


def _bad(name: str, path: str, expected: str, value: Any) -> InputError:
    return InputError(f"`{name}`: field `{path}` must be {expected}; got {_shown(value)}.")


def _check_value(hint: Any, value: Any, path: str, name: str) -> None:
    """Raise an InputError naming ``path`` when the JSON ``value`` cannot be a value of type ``hint``."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None and len(options) < len(typing.get_args(hint)):
            return
        errors = []
        for option in options:
            try:
                _check_value(option, value, path, name)
                return
            except Exception as exc:  # noqa: BLE001 - the first option's error is the one shown
                errors.append(exc)
        raise errors[0]
    if hint is float or hint is np.float64:
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise _bad(name, path, "a number", value)
    elif hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _bad(name, path, "an integer", value)
    elif hint is bool:
        if not isinstance(value, bool):
            raise _bad(name, path, "true or false", value)
    elif hint is str:
        if not isinstance(value, str):
            raise _bad(name, path, "text", value)
    elif hint is np.ndarray:
        try:
            array = np.asarray(value)
        except ValueError:  # ragged lists
            raise _bad(name, path, "an array of numbers with rows of one length", value) from None
        if array.dtype.kind not in "biuf" and not (array.dtype == object and all(
                v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in array.ravel())):
            raise _bad(name, path, "an array of numbers", value)
    elif origin is list or hint is list:
        if not isinstance(value, list):
            raise _bad(name, path, "a list", value)
        inner = typing.get_args(hint)
        for i, item in enumerate(value):
            if inner:
                _check_value(inner[0], item, f"{path}[{i}]", name)
    elif origin is dict or hint is dict:
        if not isinstance(value, dict):
            raise _bad(name, path, "an object (mapping)", value)
    elif isinstance(hint, type) and issubclass(hint, Result):
        if not isinstance(value, dict):
            raise _bad(name, path, f"a saved {hint.__name__}", value)
        _check_result(value, hint, path, name)
    elif isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            raise _bad(name, path, f"an object with the fields of {hint.__name__}", value)
        hints = _field_types(hint)
        for field in dataclasses.fields(hint):
            if field.name in value:
                _check_value(hints.get(field.name), value[field.name], f"{path}.{field.name}", name)


#: fields that are probabilities wherever they occur: a saved value outside [0, 1] is refused when read back
UNIT_FIELDS = ("pvalue", "accuracy")

#: fields that must be finite numbers wherever they occur: NaN, infinity or null are refused when read back
FINITE_FIELDS = ("pvalue",)


def mismatch(field: str, stored: Any, recomputed: Any, *, tolerance: float = 1e-9) -> str | None:
    """``"`field` is 0.99, but its evidence gives 0.296"`` when they differ, else ``None``.

    Numbers agree within ``tolerance`` (relative or absolute); anything else
    must be equal. The phrase is what :meth:`Result.contradiction` returns.
    """
    if isinstance(stored, bool) or isinstance(recomputed, bool) or not (
            isinstance(stored, (int, float, np.number)) and isinstance(recomputed, (int, float, np.number))):
        same = stored == recomputed
    else:
        a, b = float(stored), float(recomputed)
        same = (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=tolerance, abs_tol=tolerance)
    if same:
        return None

    def shown(value: Any) -> str:
        return ("true" if value else "false") if isinstance(value, bool) else _short(value)

    return f"`{field}` is {shown(stored)}, but its evidence gives {shown(recomputed)}"


def first_mismatch(*checks: str | None) -> str | None:
    """The first of several :func:`mismatch` phrases that is not ``None``."""
    return next((check for check in checks if check is not None), None)


def check_consistent(value: Any, path: str, name: str) -> None:
    """Raise an InputError when ``value`` or a result inside it contradicts itself (:meth:`Result.contradiction`)."""
    if isinstance(value, Result):  # the innermost first: a result's evidence is checked before what rests on it
        for field in dataclasses.fields(value):
            check_consistent(getattr(value, field.name), f"{path}.{field.name}" if path else field.name, name)
        try:
            problem = value.contradiction()
        except (InputError, ValueError, ArithmeticError, TypeError, KeyError, IndexError) as exc:
            problem = f"its fields cannot be checked against each other ({exc})"
        if problem:
            raise InputError(f"`{name}`: the fields of `{path or type(value).__name__}` contradict each other: "
                             f"{problem} (an edited file?).")
    elif isinstance(value, dict):
        for key, item in value.items():
            check_consistent(item, f"{path}.{key}" if path else str(key), name)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            check_consistent(item, f"{path}[{i}]", name)


def _check_result(data: dict[str, Any], expected: type[Result], path: str, name: str) -> None:
    """Check a saved result's type, fields and aligned arrays before it is rebuilt."""
    kind = data.get("type")
    target = registered_types().get(kind) if isinstance(kind, str) else None
    if target is None or not issubclass(target, expected):
        want = "a known result type" if expected is Result else f"{expected.__name__!r}"
        raise _bad(name, f"{path}.type" if path else "type", want, kind)
    hints = _field_types(target)
    for field in dataclasses.fields(target):
        where = f"{path}.{field.name}" if path else field.name
        if field.name not in data:
            if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
                raise InputError(f"`{name}`: field `{where}` is missing (a {target.__name__} needs it).")
            continue
        value = data[field.name]
        if isinstance(value, dict) and isinstance(value.get("type"), str) and value["type"] in registered_types():
            _check_result(value, Result, where, name)
        elif isinstance(value, list) and value and all(isinstance(v, dict) and v.get("type") in registered_types()
                                                       for v in value):
            for i, item in enumerate(value):
                _check_result(item, Result, f"{where}[{i}]", name)
        else:
            _check_value(hints.get(field.name), value, where, name)
            if field.name in UNIT_FIELDS and isinstance(value, (int, float)) and not isinstance(value, bool) \
                    and math.isfinite(value) and not 0 <= value <= 1:
                raise _bad(name, where, "in [0, 1]", value)
            if field.name in FINITE_FIELDS and hints.get(field.name) is float and (
                    value is None or (isinstance(value, float) and not math.isfinite(value))):
                raise _bad(name, where, "a finite number in [0, 1]", value)
    for group in target.ALIGNED:
        lengths = {field: len(data[field]) for field in group if isinstance(data.get(field), list)}
        if len(set(lengths.values())) > 1:
            listed = ", ".join(f"`{f}` {n}" for f, n in lengths.items())
            raise InputError(f"`{name}`: the fields of `{path or target.__name__}` must have one length each "
                             f"(one value per point); got {listed}.")


def load_result(data: Any, expected: type[Result] | None = None, *, name: str = "result") -> Result:
    """A result from its :meth:`Result.to_dict` form (a saved JSON file), validated, of type ``expected``.

    Before anything is rebuilt, every field is checked against its declared
    type (numbers are numbers, texts are texts, arrays hold numbers, nested
    results are of known types) and every :attr:`Result.ALIGNED` group has one
    length, so an edited file fails with one line naming the field instead
    of a traceback later; then every result in it must agree with itself
    (:meth:`Result.contradiction`: an edited decision beside its p-value, an
    accuracy beside its counts). Every type it names, nested ones included,
    must be registered (:func:`registered_types`). ``name`` is what the
    messages call ``data`` (an option or a file).

    Raises
    ------
    InputError
        ``data`` is not a saved result, not of the expected type, or a
        field is missing, mistyped or misaligned.
    """
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise InputError(f"`{name}` must be a saved fitaudit result (a JSON object with a 'type'); got {type(data).__name__}.")
    _check_result(data, expected or Result, "", name)
    result = Result.from_dict(data)
    check_consistent(result, "", name)
    return result
