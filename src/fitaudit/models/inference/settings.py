"""Process-wide inference settings: the default backend, tolerances, budgets, the cache folder."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fitaudit._errors import InputError

#: the backends a torch module can be run by ("eager": eager torch only, chosen without timing: reproducible)
BACKENDS = ("auto", "torch", "onnx", "eager")

#: how precise a torch model's arithmetic must be: "auto" lets a GPU run reduced-precision arithmetic (TF32, bf16 or
#: fp16 autocast) when it is faster and agrees with fp32 (:data:`MIN_AGREEMENT`); "fp32" forces exact fp32 (on the
#: CPU both are fp32: no reduced precision is tried there)
PRECISIONS = ("auto", "fp32")

#: a reduced-precision candidate is kept only when its predicted class (argmax) equals fp32 eager torch's on at
#: least this fraction of the calibration batch (the check batch: with its 64 rows, on every row)
MIN_AGREEMENT = 0.995

#: rows per call under "eager" when the caller fixes no batch size (fixed, so no timing probe chooses it)
EAGER_BATCH_SIZE = 256

#: the backend of the adaptive instruments (the examiner) unless one is named: their search amplifies the
#: tiny logit differences between backends, and "auto" chooses by timing, so they run one fixed backend
ADAPTIVE_BACKEND = "eager"

#: absolute part of the logit tolerance a backend must meet against eager torch
LOGIT_ATOL = 1e-4

#: relative part (times the largest absolute reference logit of the check batch)
LOGIT_RTOL = 1e-3

#: rows of the first batch used to check a backend against eager torch
CHECK_ROWS = 64

#: most bytes one batch may take (its inputs plus every layer's outputs, an upper bound of what
#: inference holds at once) when the batch size is chosen; less on a machine with less free memory
MEMORY_BUDGET = 2**30


def memory_budget() -> int:
    """:data:`MEMORY_BUDGET`, or a quarter of the free physical memory when that is less (where the OS tells)."""
    try:
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # not a POSIX system that reports it
        return MEMORY_BUDGET
    return int(min(MEMORY_BUDGET, max(free // 4, 64 * 2**20)))

#: under "auto", a module whose eager pass is at least this fast (rows/s) stays eager
EAGER_FAST_ENOUGH = 50_000

#: the process default backend, and whether a model took it within the innermost :func:`using_backend` block
_state: dict[str, Any] = {"backend": os.environ.get("FITAUDIT_BACKEND", "auto"), "applied": False,
                          "named": "FITAUDIT_BACKEND" in os.environ, "precision": "auto"}


def check_precision(value: object, name: str = "precision") -> str:
    """Validate a precision name (:data:`PRECISIONS`)."""
    if not isinstance(value, str) or value not in PRECISIONS:
        raise InputError(f"`{name}` must be one of {', '.join(repr(p) for p in PRECISIONS)}; got {value!r}.")
    return value


def default_precision() -> str:
    """The precision a torch model gets when none is named (``--precision``, else ``"auto"``)."""
    return str(_state["precision"])


@contextlib.contextmanager
def using_precision(precision: str | None) -> Iterator[None]:
    """Within the block, torch models wrapped without a ``precision`` use ``precision`` (``None``: unchanged)."""
    previous = _state["precision"]
    if precision is not None:
        _state["precision"] = check_precision(precision)
    try:
        yield
    finally:
        _state["precision"] = previous


def check_backend(value: object, name: str = "backend") -> str:
    """Validate a backend name (``"auto"``, ``"torch"`` or ``"onnx"``)."""
    if not isinstance(value, str) or value not in BACKENDS:
        raise InputError(f"`{name}` must be one of {', '.join(repr(b) for b in BACKENDS)}; got {value!r}.")
    return value


def default_backend() -> str:
    """The backend a torch model gets when none is named (``FITAUDIT_BACKEND``, else ``"auto"``).

    Torch and ONNX models ask for it when they are wrapped or keyed; asking
    counts as taking it (:func:`default_backend_applied`).
    """
    backend = check_backend(_state["backend"], "FITAUDIT_BACKEND")
    _state["applied"] = True
    return backend


def default_backend_applied() -> bool:
    """Whether a model took the default backend within the innermost :func:`using_backend` block.

    The command line uses it to say when a ``--backend`` it was given
    applied to no model (a scikit-learn model runs as it is).
    """
    return bool(_state["applied"])


def mark_default_backend_applied() -> None:
    """Count the default backend as taken here (a model in a worker process took it: :func:`fitaudit.parallel.parallel_map`)."""
    _state["applied"] = True


def requested_backend() -> str | None:
    """The default backend named in this process, without taking it (``None`` when none was named).

    What :func:`fitaudit.parallel.parallel_map` hands its units: a worker
    process does not inherit a default set by :func:`set_default_backend`,
    and a unit run where none was named must see none named (the examiner
    then runs :data:`ADAPTIVE_BACKEND`, not ``"auto"``).
    """
    value = _state["backend"]
    return value if _state["named"] and value in BACKENDS else None


def set_default_backend(backend: str) -> None:
    """Set the process-wide default backend (what ``--backend`` does for a command)."""
    _state["backend"] = check_backend(backend)
    _state["named"] = True


def named_backend() -> str | None:
    """The default backend when one was named (``--backend``, ``FITAUDIT_BACKEND``, :func:`set_default_backend`), else None.

    Counts as taking it (:func:`default_backend_applied`) when there is one.
    """
    return default_backend() if _state["named"] else None


def adaptive_backend(backend: str | None = None) -> str:
    """The backend of an adaptive instrument: ``backend`` if given, else the named default, else :data:`ADAPTIVE_BACKEND`."""
    if backend is not None:
        return check_backend(backend)
    return named_backend() or ADAPTIVE_BACKEND


@contextlib.contextmanager
def using_backend(backend: str | None) -> Iterator[None]:
    """Within the block, torch models wrapped without a ``backend`` use ``backend`` (``None``: unchanged).

    :func:`default_backend_applied` starts afresh in the block; on leaving,
    a model that took the default inside counts for the enclosing block too.
    """
    previous, applied, named = _state["backend"], _state["applied"], _state["named"]
    if backend is not None:
        set_default_backend(backend)
    _state["applied"] = False
    try:
        yield
    finally:
        _state["backend"], _state["named"] = previous, named
        _state["applied"] = applied or _state["applied"]


def cache_dir() -> Path | None:
    """Folder of exported models and measured choices: ``FITAUDIT_CACHE_DIR``, else the user cache folder.

    ``$XDG_CACHE_HOME/fitaudit/inference`` or ``~/.cache/fitaudit/inference``;
    ``None`` when neither is usable (exports then stay in memory).
    """
    root = os.environ.get("FITAUDIT_CACHE_DIR")
    if root:
        return Path(root) / "inference"
    base = os.environ.get("XDG_CACHE_HOME") or (os.path.join(os.path.expanduser("~"), ".cache") if os.path.expanduser("~") != "~" else None)
    return Path(base) / "fitaudit" / "inference" if base else None
