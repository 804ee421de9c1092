"""Hyperparameter grids: from model_configs.json or from plain per-model values.

The competition's ``model_configs.json`` maps a model id to
``{"hparams": {name: {"possible_values": [...], "current_value": v}},
"metrics": {"train_acc": ..., "test_acc": ...}}`` (docs/pgdl.md#competition-tasks-on-disk).
:func:`read_model_configs` checks it the way the official scoring program
needs it (a complete grid, each combination once) and turns it into integer
codes; :func:`check_hparams` does the same for hyperparameters handed in as
arrays; :func:`align_measure` matches a mapping of measure values to the
models, ids with or without the ``model_`` prefix.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fitaudit._errors import InputError

#: how a model's ``current_value`` is matched to the grid's ``possible_values``
VALUE_MATCHING = ("exact", "numeric")


def normalise_model_id(model_id: Any) -> str:
    """The official program's id: ``"model_<id>"`` unless ``"model"`` is already in it."""
    text = str(model_id)
    return text if "model" in text else f"model_{text}"


@dataclasses.dataclass(frozen=True)
class Grid:
    """A population of models on a hyperparameter grid.

    Attributes
    ----------
    ids : tuple of str
        Model ids (normalised: ``model_<id>``), in the file's order.
    gap : ndarray of shape (n,)
        ``train_acc - test_acc`` per model.
    names : tuple of str
        Hyperparameter names, in the order of the first model's entry.
    values : tuple of tuples
        The possible values of each hyperparameter (the first model's lists).
    codes : ndarray of int, shape (n, len(names))
        Index of each model's current value in ``values``.
    """

    ids: tuple[str, ...]
    gap: np.ndarray
    names: tuple[str, ...]
    values: tuple[tuple[Any, ...], ...]
    codes: np.ndarray

    @property
    def sizes(self) -> tuple[int, ...]:
        """Number of possible values of each hyperparameter."""
        return tuple(len(v) for v in self.values)

    def hparams(self) -> dict[str, list[Any]]:
        """Each hyperparameter's value per model (name -> list of n values)."""
        return {
            name: [self.values[j][c] for c in self.codes[:, j]] for j, name in enumerate(self.names)
        }


def _field(entry: Any, key: str, where: str) -> Any:
    if not isinstance(entry, Mapping) or key not in entry:
        raise InputError(f"`model_configs` entry {where} lacks the field {key!r}.")
    return entry[key]


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"`model_configs` field {where} must be a finite number; got {value!r}.")
    return float(value)


def _index_of(current: Any, possible: list[Any], matching: str, where: str) -> int:
    """Position of ``current`` in ``possible`` as the chosen matching sees it."""
    numeric = [i for i, v in enumerate(possible) if v == current]
    if matching == "exact":
        exact = [i for i, v in enumerate(possible) if str(v) == str(current)]
        if exact:
            return exact[0]
        if numeric:
            raise InputError(
                f"`model_configs` {where} has current_value {current!r}, written differently from the "
                f"possible value {possible[numeric[0]]!r}: the official scoring program keys its bins by "
                f"str() ({str(current)!r} vs {str(possible[numeric[0]])!r}), prints a KeyError and drops "
                "every pair with this model. Fix the file, or pass values='numeric' to match values by "
                "equality (the number then differs from the official program's)."
            )
    elif numeric:
        return numeric[0]
    raise InputError(
        f"`model_configs` {where} has current_value {current!r}, which is not one of the "
        f"possible_values {possible!r} (of the first model, which the official program uses)."
    )


def _combination_problem(codes: np.ndarray, sizes: Sequence[int], ids: Sequence[str]) -> str | None:
    """Why the models are not a complete grid with each combination once (None if they are)."""
    flat = np.ravel_multi_index(codes.T, sizes) if codes.size else np.zeros(len(ids), dtype=np.int64)
    counts = np.bincount(flat, minlength=int(np.prod(sizes)))
    duplicated = np.flatnonzero(counts > 1)
    if duplicated.size:
        members = [ids[int(i)] for i in np.flatnonzero(flat == duplicated[0])]
        return f"the combination of hyperparameter values of {', '.join(members)} appears {len(members)} times"
    missing = np.flatnonzero(counts == 0)
    if missing.size:
        return f"{missing.size} of {counts.size} combinations of hyperparameter values have no model"
    return None


def read_model_configs(model_configs: Any, *, values: str = "exact") -> Grid:
    """Check a parsed model_configs.json and return its :class:`Grid`.

    Parameters
    ----------
    model_configs : mapping
        Model id -> ``{"hparams": ..., "metrics": ...}`` as in the file.
    values : {"exact", "numeric"}
        How a model's ``current_value`` is matched to the possible values.
        ``"exact"`` (default) as the official program's bins see them, by
        ``str()``: a value written ``256.0`` where the grid has ``256`` is an
        error (the official program prints a KeyError and silently drops that
        model's pairs). ``"numeric"`` matches by equality (``256.0 == 256``),
        as the official grid check does; documented deviation.

    Raises
    ------
    InputError
        A missing field, ids that collide after normalisation, hyperparameter
        names that differ between models, a value not in the grid, or an
        incomplete or duplicated grid (the official program refuses such a
        task and leaves it out of the average).
    """
    if values not in VALUE_MATCHING:
        raise InputError(f"`values` must be one of {', '.join(VALUE_MATCHING)}; got {values!r}.")
    if not isinstance(model_configs, Mapping) or not model_configs:
        raise InputError(
            "`model_configs` must be a non-empty mapping of model id -> {hparams, metrics}; "
            f"got {type(model_configs).__name__ if not isinstance(model_configs, Mapping) else 'an empty mapping'}."
        )
    ids: list[str] = []
    seen: dict[str, Any] = {}
    for key in model_configs:
        normal = normalise_model_id(key)
        if normal in seen:
            raise InputError(f"`model_configs` has ids {seen[normal]!r} and {key!r}, both model {normal!r}.")
        seen[normal] = key
        ids.append(normal)
    entries = list(model_configs.values())
    first = _field(entries[0], "hparams", repr(ids[0]))
    if not isinstance(first, Mapping) or not first:
        raise InputError(f"`model_configs` entry {ids[0]!r} has no hyperparameters.")
    names = tuple(str(name) for name in first)
    possible: list[list[Any]] = []
    for name in first:
        options = _field(first[name], "possible_values", f"{ids[0]!r} hparams[{name!r}]")
        if not isinstance(options, list) or not options:
            raise InputError(
                f"`model_configs` {ids[0]!r} hparams[{name!r}]['possible_values'] must be a non-empty list; got {options!r}."
            )
        for i, j in itertools.combinations(range(len(options)), 2):
            if options[i] == options[j]:
                raise InputError(
                    f"`model_configs` {ids[0]!r} hparams[{name!r}]['possible_values'] lists {options[i]!r} twice."
                )
        possible.append(options)
    codes = np.zeros((len(entries), len(names)), dtype=np.int64)
    gap = np.zeros(len(entries))
    for row, (model_id, entry) in enumerate(zip(ids, entries)):
        hparams = _field(entry, "hparams", repr(model_id))
        if not isinstance(hparams, Mapping) or set(map(str, hparams)) != set(names):
            found = sorted(map(str, hparams)) if isinstance(hparams, Mapping) else hparams
            raise InputError(
                f"`model_configs` {model_id!r} has hyperparameters {found}; the first model has {sorted(names)}."
            )
        for column, name in enumerate(first):
            current = _field(hparams[name], "current_value", f"{model_id!r} hparams[{name!r}]")
            codes[row, column] = _index_of(current, possible[column], values, f"{model_id!r} hparams[{name!r}]")
        metrics = _field(entry, "metrics", repr(model_id))
        train = _number(_field(metrics, "train_acc", f"{model_id!r} metrics"), f"{model_id!r} metrics.train_acc")
        test = _number(_field(metrics, "test_acc", f"{model_id!r} metrics"), f"{model_id!r} metrics.test_acc")
        gap[row] = train - test
    sizes = [len(v) for v in possible]
    problem = _combination_problem(codes, sizes, ids)
    if problem is not None:
        raise InputError(
            f"`model_configs` is not a complete grid with each combination once: {problem} "
            "(the official scoring program refuses such a task)."
        )
    return Grid(tuple(ids), gap, names, tuple(tuple(v) for v in possible), codes)


def align_measure(grid: Grid, measure: Any) -> np.ndarray:
    """The measure value of each of ``grid.ids`` from a mapping id -> value (ids with or without ``model_``)."""
    if not isinstance(measure, Mapping):
        raise InputError(f"`measure` must be a mapping of model id -> value; got {type(measure).__name__}.")
    by_id: dict[str, Any] = {}
    for key, value in measure.items():
        normal = normalise_model_id(key)
        if normal in by_id:
            raise InputError(f"`measure` has two values for model {normal!r} (ids with and without 'model_').")
        by_id[normal] = value
    missing = [i for i in grid.ids if i not in by_id]
    extra = sorted(set(by_id) - set(grid.ids))
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"no value for {len(missing)} model(s) ({', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''})")
        if extra:
            parts.append(f"values for {len(extra)} unknown id(s) ({', '.join(extra[:5])}{', ...' if len(extra) > 5 else ''})")
        raise InputError(f"`measure` does not match the models of `model_configs`: {'; '.join(parts)}.")
    out = np.empty(len(grid.ids))
    for i, model_id in enumerate(grid.ids):
        value = by_id[model_id]
        if isinstance(value, str) and value == "EXCEEDED":
            raise InputError(
                f"`measure` for {model_id!r} is 'EXCEEDED' (over the time budget): the official scorer "
                "gives the whole submission 0 and scores no task."
            )
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise InputError(f"`measure` for {model_id!r} must be a number; got {value!r}.")
        if math.isnan(float(value)):
            raise InputError(f"`measure` for {model_id!r} is NaN.")
        out[i] = float(value)
    return out


def check_hparams(hparams: Any, n: int) -> tuple[tuple[str, ...], np.ndarray, tuple[int, ...]]:
    """Hyperparameters as integer codes.

    ``hparams`` is a mapping name -> sequence of ``n`` values (hashable;
    values that compare equal, like ``256`` and ``256.0``, are one value) or
    a sequence of ``n`` mappings name -> value. Returns the names, the codes
    ``(n, len(names))`` and the number of distinct values of each.
    """
    if isinstance(hparams, Sequence) and not isinstance(hparams, str) and all(isinstance(h, Mapping) for h in hparams):
        if len(hparams) != n:
            raise InputError(f"`hparams` must have one mapping per model ({n}); got {len(hparams)}.")
        keys = [set(h) for h in hparams]
        if any(k != keys[0] for k in keys):
            raise InputError("`hparams` mappings must all have the same hyperparameter names.")
        hparams = {name: [h[name] for h in hparams] for name in (hparams[0] if n else ())}
    if not isinstance(hparams, Mapping) or not hparams:
        raise InputError(
            "`hparams` must be a non-empty mapping of name -> one value per model, or a list of "
            f"per-model mappings; got {type(hparams).__name__}."
        )
    names = tuple(str(name) for name in hparams)
    codes = np.zeros((n, len(names)), dtype=np.int64)
    sizes = []
    for column, (name, column_values) in enumerate(hparams.items()):
        if isinstance(column_values, (str, bytes)) or not isinstance(column_values, (Sequence, np.ndarray)):
            raise InputError(f"`hparams[{name!r}]` must be a sequence of {n} values; got {type(column_values).__name__}.")
        if len(column_values) != n:
            raise InputError(f"`hparams[{name!r}]` must have one value per model ({n}); got {len(column_values)}.")
        index: dict[Any, int] = {}
        for row, value in enumerate(column_values):
            value = value.item() if isinstance(value, np.generic) else value
            try:
                codes[row, column] = index.setdefault(value, len(index))
            except TypeError:
                raise InputError(f"`hparams[{name!r}]` values must be hashable; got {type(value).__name__}.") from None
        sizes.append(len(index))
    return names, codes, tuple(sizes)
