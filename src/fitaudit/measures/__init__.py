"""Registry of complexity measures that predict the generalization gap.

User guide: docs/measures.md. Jiang et al., "Fantastic generalization measures and
where to find them" (ICLR 2020), the NeurIPS 2020 PGDL competition's
baselines, starting kit and winning entries. One module per measure; every
measure is oriented so that larger means a larger predicted gap.

>>> from fitaudit.measures import list_measures, get_measure   # doctest: +SKIP
>>> get_measure("spectral_product")(record)                     # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fitaudit._errors import InputError
from fitaudit.measures.base import Measure, ModelRecord

__all__ = ["Measure", "ModelRecord", "get_measure", "list_measures", "measure_class", "register_measure", "registered"]

#: measures added by :func:`register_measure` (the built-in ones are :data:`fitaudit.measures.catalogue.BUILTIN_MEASURES`)
_ADDED: dict[str, type[Measure]] = {}


def registered() -> Mapping[str, type[Measure]]:
    """Every measure class by name: the built-in catalogue, and those added by :func:`register_measure`."""
    from fitaudit.measures.catalogue import BUILTIN_MEASURES

    return {**BUILTIN_MEASURES, **_ADDED}


def register_measure(cls: type[Measure]) -> type[Measure]:
    """Add a measure of one's own (a :class:`Measure` subclass), findable by its ``name``; returns it.

    Usable as a class decorator; a name already taken by another class is refused.
    """
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise InputError(f"measure class {cls.__name__} needs a non-empty `name` class attribute.")
    taken = registered().get(name)
    if taken is not None and taken is not cls:
        raise InputError(f"a measure named {name!r} is already registered ({taken.__name__}).")
    _ADDED[name] = cls
    return cls


def get_measure(name: str, **kwargs: Any) -> Measure:
    """The registered measure ``name``, constructed with ``kwargs`` (e.g. ``random_state``)."""
    return measure_class(name)(**kwargs)


def measure_class(name: str) -> type[Measure]:
    """The class registered as ``name``: its metadata (family, needs, formats) without constructing it."""
    classes = registered()
    if not isinstance(name, str) or name not in classes:
        raise InputError(f"`name` must be a registered measure ({', '.join(sorted(classes))}); got {name!r}.")
    return classes[name]


def list_measures() -> list[str]:
    """Names of every registered measure, sorted."""
    return sorted(registered())
