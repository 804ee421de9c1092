"""Registry of built-in torch architectures, loadable from a JSON config.

A saved torch model is ``weights.safetensors`` plus a JSON config
``{"architecture": NAME, "kwargs": {...}}``; :func:`build_architecture`
rebuilds the module from the config alone, so no code is ever unpickled.
Modules that define architectures register them with
:func:`register_architecture`. Before a lookup the loader imports
:data:`ARCHITECTURE_MODULES` (this package's own networks) and every module
declared under the entry-point group :data:`ENTRY_POINT_GROUP` in a
distribution's metadata: fitaudit's PGDL zoo networks
(:mod:`fitaudit.pgdl.nets`) are declared there in ``pyproject.toml``, so
``models/`` names no instrument and another package can add its own
architectures the same way.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable
from typing import Any

from fitaudit._errors import InputError

#: modules of this package whose import registers architectures
ARCHITECTURE_MODULES: list[str] = [
    "fitaudit.models.torch_nets",
    "fitaudit.models.shapes_nets",
]

#: entry-point group of further modules that register architectures when imported
ENTRY_POINT_GROUP = "fitaudit.architectures"

_BUILDERS: dict[str, Callable[..., Any]] = {}
_LOADED: list[bool] = []


def register_architecture(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register ``builder(**kwargs) -> torch.nn.Module`` as ``name``."""

    def decorate(builder: Callable[..., Any]) -> Callable[..., Any]:
        _BUILDERS[name] = builder
        return builder

    return decorate


def _load_builtin_modules() -> None:
    """Import the modules that register architectures (once per process)."""
    if _LOADED:
        return
    for module in ARCHITECTURE_MODULES:
        importlib.import_module(module)
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        entry.load()
    _LOADED.append(True)


def list_architectures() -> list[str]:
    """Names of every registered architecture."""
    _load_builtin_modules()
    return sorted(_BUILDERS)


def build_architecture(config: Any) -> Any:
    """Build the torch module that ``config`` describes.

    Parameters
    ----------
    config : dict
        ``{"architecture": name, "kwargs": {...}}``; kwargs must be JSON
        values accepted by the builder.
    """
    if not isinstance(config, dict) or "architecture" not in config:
        raise InputError(
            "`config` must be a JSON object with an 'architecture' key and optional 'kwargs'; "
            f"got {type(config).__name__}."
        )
    name = config["architecture"]
    kwargs = config.get("kwargs", {})
    if not isinstance(kwargs, dict):
        raise InputError(f"`config['kwargs']` must be a JSON object; got {type(kwargs).__name__}.")
    _load_builtin_modules()
    if name not in _BUILDERS:
        known = ", ".join(sorted(_BUILDERS)) or "none registered"
        raise InputError(f"`config['architecture']` must be a built-in architecture ({known}); got {name!r}.")
    try:
        return _BUILDERS[name](**kwargs)
    except TypeError as exc:
        raise InputError(f"`config['kwargs']` do not fit architecture {name!r}: {exc}.") from exc
