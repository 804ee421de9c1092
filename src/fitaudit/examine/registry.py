"""Examiners by name: ``get_examiner("bo", seed=0)``, ``list_examiners()``.

Names used by the CLI, the reproductions and reports: ``"random"``,
``"bo"`` (GP-UCB), ``"rl"`` (REINFORCE with an LSTM policy), ``"grid"``
(every point of a grid, Engstrom et al. 2019: the exact reference) and
``"optuna:<sampler>"`` for any of Optuna's samplers known by name
(``"optuna:tpe"``, ``"optuna:cmaes"``, ``"optuna:qmc"``, ``"optuna:gp"``,
``"optuna:random"``).
"""

from __future__ import annotations

import importlib
from typing import Any

from fitaudit._errors import InputError
from fitaudit.examine.base import Examiner

#: name -> "module:ClassName" (imported when asked for, so that optional
#: dependencies are only needed by the examiners that use them)
_EXAMINERS = {
    "random": "fitaudit.examine.random:RandomExaminer",
    "bo": "fitaudit.examine.bo:BOExaminer",
    "rl": "fitaudit.examine.rl:RLExaminer",
    "grid": "fitaudit.examine.grid:GridExaminer",
}
_OPTUNA_PREFIX = "optuna:"


def _optuna_samplers() -> tuple[str, ...]:
    from fitaudit.examine.optuna_adapter import SAMPLERS

    return tuple(SAMPLERS)


def list_examiners() -> list[str]:
    """Every name :func:`get_examiner` accepts, sorted."""
    names = list(_EXAMINERS) + [_OPTUNA_PREFIX + s for s in _optuna_samplers()]
    return sorted(names)


def get_examiner(name: str, **kwargs: Any) -> Examiner:
    """A new examiner called ``name``, built with keyword arguments ``kwargs``.

    Parameters
    ----------
    name : str
        One of :func:`list_examiners`.
    **kwargs
        Constructor arguments (``seed=...`` and the strategy's settings).

    Raises
    ------
    InputError
        For an unknown name, listing the known ones (named ``examiner``, as
        :func:`fitaudit.examine.examine` and ``--examiner`` call it).
    """
    if not isinstance(name, str):
        raise InputError(f"`examiner` must be an examiner name (str); got {type(name).__name__}.")
    key = name.strip().lower()
    if key.startswith(_OPTUNA_PREFIX):
        sampler = key[len(_OPTUNA_PREFIX):]
        if sampler not in _optuna_samplers():
            raise InputError(
                f"`examiner` {name!r} names an unknown Optuna sampler; "
                f"known: {', '.join(_optuna_samplers())}."
            )
        from fitaudit.examine.optuna_adapter import OptunaExaminer

        return OptunaExaminer(sampler=sampler, **kwargs)
    if key not in _EXAMINERS:
        raise InputError(f"`examiner` must be one of {', '.join(list_examiners())}; got {name!r}.")
    module, cls = _EXAMINERS[key].split(":")
    examiner_class = getattr(importlib.import_module(module), cls)
    examiner: Examiner = examiner_class(**kwargs)
    return examiner
