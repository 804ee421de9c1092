"""Package attributes imported on first use (PEP 562), so that importing a package stays cheap.

``fitaudit.data``, ``fitaudit.overfit`` and ``fitaudit.pmv`` re-export their
submodules' public names; importing them all eagerly made every
``fitaudit`` command pay for scipy.stats and scikit-learn at start-up, and
made ``import fitaudit.overfit.translation`` import the whole package.
Each package keeps the usual static ``__all__`` and the same imports under
``TYPE_CHECKING`` (so type checkers and linters see ordinary re-exports),
plus the table name -> submodule passed to :func:`lazy_exports`;
``tests/test_layering.py`` checks that every name of ``__all__`` resolves.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable


def lazy_exports(package: str, exports: dict[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """Module ``__getattr__`` and ``__dir__`` serving ``exports`` (name -> submodule of ``package``).

    The submodule is imported when the name is first looked up; the value is
    then stored in the package's namespace, so later look-ups are ordinary.
    """

    def __getattr__(name: str) -> object:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
        setattr(importlib.import_module(package), name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(exports) | set(vars(importlib.import_module(package))))

    return __getattr__, __dir__
