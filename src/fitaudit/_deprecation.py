"""Shims for renamed arguments and result fields, kept for one release.

The public API follows one naming table (docs/reference/conventions.md);
names that predate it are still accepted for one release with a
:class:`DeprecationWarning` naming the new one.
"""

from __future__ import annotations

import functools
import importlib
import sys
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from fitaudit._errors import InputError

F = TypeVar("F", bound=Callable[..., Any])


def warn_renamed(where: str, old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` (of ``where``) is deprecated in favour of ``new``."""
    warnings.warn(
        f"{where}: `{old}` is deprecated and will be removed in the next release; use `{new}`.",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def renamed_keywords(**renames: str) -> Callable[[F], F]:
    """Accept the old keyword names ``old=new`` of a function for one release.

    An old keyword is passed on under its new name with a
    :class:`DeprecationWarning`; giving both is an :class:`InputError`.
    """

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, new in renames.items():
                if old in kwargs:
                    if new in kwargs:
                        raise InputError(
                            f"give `{new}` only (`{old}` is its deprecated name), not both."
                        )
                    warn_renamed(f"{func.__qualname__}()", old, new)
                    kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def renamed_field(new: str, old: str) -> property:
    """A read-only property ``old`` returning field ``new`` with a :class:`DeprecationWarning`."""

    def getter(self: Any) -> Any:
        warn_renamed(type(self).__name__, old, new)
        return getattr(self, new)

    return property(getter, doc=f"Deprecated name of :attr:`{new}`.")


def moved_package(old: str, new: str, submodules: tuple[str, ...]) -> None:
    """Make package ``old`` an alias of ``new`` (and ``old.sub`` of ``new.sub``) for one release.

    Called from ``old``'s ``__init__``: warns once with a
    :class:`DeprecationWarning` naming the new place, then registers the new
    package's submodules under the old names so that ``import old.sub`` and
    ``from old.sub import name`` keep working.
    """
    warnings.warn(
        f"`{old}` moved to `{new}` and the old path will be removed in the next release; import `{new}`.",
        DeprecationWarning,
        stacklevel=3,
    )
    package = importlib.import_module(new)
    sys.modules[old].__dict__.update({k: v for k, v in vars(package).items() if not k.startswith("__")})
    sys.modules[old].__all__ = list(getattr(package, "__all__", []))  # type: ignore[attr-defined]
    for name in submodules:
        sys.modules[f"{old}.{name}"] = importlib.import_module(f"{new}.{name}")


#: R_S's old key in saved entries (docs/reference/conventions.md: ``risk_plain``)
RISK_PLAIN_RENAMED = {"error_rate": "risk_plain"}


def current_keys(entry: dict[str, Any], renames: dict[str, str] = RISK_PLAIN_RENAMED) -> dict[str, Any]:
    """``entry`` (a saved per-run or per-curve dict) with its keys under their current names."""
    return {renames.get(key, key): value for key, value in entry.items()}
