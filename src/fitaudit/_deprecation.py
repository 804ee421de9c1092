"""Shims for renamed arguments and result fields, kept for one release.

The public API follows one naming table (docs/reference/conventions.md);
names that predate it are still accepted for one release with a
:class:`DeprecationWarning` naming the new one.
"""

from __future__ import annotations

import functools
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
