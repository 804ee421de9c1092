"""Argument checks shared by every public entry point.

Each check raises :class:`fitaudit.InputError` with a message that names the
argument in backticks, says what was expected and what came, e.g.
``"`eps` must be a positive integer; got 0."``
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from fitaudit._errors import InputError


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_int(
    value: Any, name: str, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """Return ``value`` as an int, checking its type and bounds."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InputError(f"`{name}` must be an integer; got {_describe(value)}.")
    value = int(value)
    if minimum is not None and value < minimum:
        what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise InputError(f"`{name}` must be {what}; got {value}.")
    if maximum is not None and value > maximum:
        raise InputError(f"`{name}` must be an integer <= {maximum}; got {value}.")
    return value


def check_float(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_inclusive: bool = True,
    high_inclusive: bool = True,
) -> float:
    """Return ``value`` as a finite float inside the given interval."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"`{name}` must be a real number; got {_describe(value)}.")
    value = float(value)
    if not np.isfinite(value):
        raise InputError(f"`{name}` must be finite; got {value}.")
    too_low = low is not None and (value < low or (not low_inclusive and value == low))
    too_high = high is not None and (value > high or (not high_inclusive and value == high))
    if too_low or too_high:
        left = "[" if low_inclusive and low is not None else "("
        right = "]" if high_inclusive and high is not None else ")"  # infinity is never allowed
        lo = "-inf" if low is None else f"{low:g}"
        hi = "inf" if high is None else f"{high:g}"
        raise InputError(f"`{name}` must be in {left}{lo}, {hi}{right}; got {value:g}.")
    return value


def check_choice(value: Any, name: str, choices: Sequence[str]) -> str:
    """Check that ``value`` is one of ``choices``."""
    if value not in choices:
        options = ", ".join(repr(c) for c in choices)
        raise InputError(f"`{name}` must be one of {options}; got {_describe(value)}.")
    return str(value)


def as_array(value: Any, name: str) -> np.ndarray:
    """``numpy.asarray(value)``, with ragged nesting and the like reported as an :class:`InputError`."""
    try:
        return np.asarray(value)
    except Exception as exc:  # ragged lists and the like
        raise InputError(f"`{name}` must be array-like; could not convert it ({exc}).") from exc


def check_array(
    value: Any,
    name: str,
    *,
    ndim: int | tuple[int, ...] | None = None,
    dtype: Any = np.float64,
    min_len: int = 1,
    finite: bool = True,
    value_range: tuple[float, float] | None = None,
) -> np.ndarray:
    """Convert ``value`` to a numeric array and validate it.

    Parameters
    ----------
    ndim : int or tuple of int, optional
        Allowed numbers of dimensions.
    dtype : numpy dtype
        Target dtype (conversion must be possible without guessing).
    min_len : int
        Minimum length of the first axis.
    finite : bool
        Reject NaN and infinity.
    value_range : (low, high), optional
        Inclusive bounds every element must respect.
    """
    array = as_array(value, name)
    if array.dtype == object or not (
        np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype, np.bool_)
    ):
        raise InputError(f"`{name}` must hold numbers; got dtype {array.dtype}.")
    array = array.astype(dtype, copy=False)
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if array.ndim not in allowed:
            want = " or ".join(str(d) for d in allowed)
            raise InputError(
                f"`{name}` must have {want} dimension(s); got shape {array.shape}."
            )
    if array.ndim == 0 or array.shape[0] < min_len:
        got = 0 if array.ndim == 0 else array.shape[0]
        raise InputError(f"`{name}` must have at least {min_len} element(s); got {got}.")
    if finite and np.issubdtype(array.dtype, np.floating) and not np.all(np.isfinite(array)):
        bad = int(np.size(array) - np.count_nonzero(np.isfinite(array)))
        raise InputError(f"`{name}` must be finite; it holds {bad} NaN or infinite value(s).")
    if value_range is not None and array.size:
        lo, hi = float(np.min(array)), float(np.max(array))
        if lo < value_range[0] or hi > value_range[1]:
            raise InputError(
                f"`{name}` must have values in [{value_range[0]:g}, {value_range[1]:g}]; "
                f"got values in [{lo:g}, {hi:g}]."
            )
    return array


def check_labels(
    value: Any, name: str, *, n_classes: int | None = None, length: int | None = None
) -> np.ndarray:
    """Validate integer class labels in ``[0, n_classes)``."""
    array = as_array(value, name)
    if array.ndim != 1:
        raise InputError(f"`{name}` must be a 1-d array of labels; got shape {array.shape}.")
    if array.size == 0:
        raise InputError(f"`{name}` must not be empty.")
    if np.issubdtype(array.dtype, np.floating):
        if not np.all(np.isfinite(array)) or not np.all(array == np.round(array)):
            raise InputError(f"`{name}` must hold integer class labels; got non-integer values.")
    elif not np.issubdtype(array.dtype, np.integer):
        raise InputError(f"`{name}` must hold integer class labels; got dtype {array.dtype}.")
    labels = array.astype(np.int64)
    if labels.min() < 0:
        raise InputError(f"`{name}` must be non-negative class indices; got {labels.min()}.")
    if n_classes is not None and labels.max() >= n_classes:
        raise InputError(
            f"`{name}` holds label {labels.max()} but the model has {n_classes} classes "
            f"(labels must be in [0, {n_classes - 1}])."
        )
    if length is not None and labels.shape[0] != length:
        raise InputError(f"`{name}` must have {length} entries (one per example); got {labels.shape[0]}.")
    return labels


def check_same_length(**arrays: np.ndarray) -> int:
    """Check that all arrays share their first dimension; return it."""
    lengths = {name: len(a) for name, a in arrays.items()}
    if len(set(lengths.values())) > 1:
        described = ", ".join(f"`{k}` has {v}" for k, v in lengths.items())
        raise InputError(f"arguments must have the same number of examples; {described}.")
    return next(iter(lengths.values()))


def memory_budget() -> int:
    """Bytes one array, batch or network may take: half this machine's physical memory (8 GiB when unknown)."""
    import os

    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")) // 2
    except (ValueError, OSError, AttributeError):
        return 8 * 2**30


def size_text(nbytes: float) -> str:
    """``"4.5 GiB"``: a byte count in binary units."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if nbytes < 1024 or unit == "TiB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    raise AssertionError("unreachable")


def check_memory(nbytes: float, what: str, *, fix: str = "") -> None:
    """Refuse work whose estimated memory ``nbytes`` exceeds :func:`memory_budget`, before it starts.

    ``what`` names the option or file and what it asks for, e.g.
    ``"`--objects-per-class` 10**9 x `--renders-per-object` 10 renders"``;
    ``fix`` says how to ask for less.
    """
    budget = memory_budget()
    if nbytes > budget:
        raise InputError(f"{what} would need about {size_text(nbytes)} of memory, more than the {size_text(budget)} "
                         f"this run may take (half of this machine's memory){'; ' + fix if fix else ''}.")
