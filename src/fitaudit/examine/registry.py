"""Examiners by name: ``get_examiner("bo", random_state=0)``, ``list_examiners()``.

Names used by the CLI, the reproductions and reports: ``"random"``,
``"bo"`` (GP-UCB), ``"rl"`` (REINFORCE with an LSTM policy), ``"grid"``
(every point of a grid, Engstrom et al. 2019: the exact reference) and
``"optuna:<sampler>"`` for any of Optuna's samplers known by name
(``"optuna:tpe"``, ``"optuna:cmaes"``, ``"optuna:qmc"``, ``"optuna:gp"``,
``"optuna:random"``).
"""

from __future__ import annotations

from typing import Any

from fitaudit._errors import InputError
from fitaudit.examine.base import Examiner
from fitaudit.examine.bo import BOExaminer
from fitaudit.examine.grid import GridExaminer
from fitaudit.examine.optuna_adapter import SAMPLERS, OptunaExaminer
from fitaudit.examine.random import RandomExaminer
from fitaudit.examine.rl import RLExaminer

#: name -> examiner class, by explicit import (optional dependencies, torch for ``"rl"``, Optuna, are
#: imported by the examiners that use them when they are built, not here)
EXAMINERS: dict[str, type[Examiner]] = {
    "random": RandomExaminer,
    "bo": BOExaminer,
    "rl": RLExaminer,
    "grid": GridExaminer,
}
_OPTUNA_PREFIX = "optuna:"


def list_examiners() -> list[str]:
    """Every name :func:`get_examiner` accepts, sorted."""
    names = list(EXAMINERS) + [_OPTUNA_PREFIX + s for s in SAMPLERS]
    return sorted(names)


def get_examiner(name: str, **kwargs: Any) -> Examiner:
    """A new examiner called ``name``, built with keyword arguments ``kwargs``.

    Parameters
    ----------
    name : str
        One of :func:`list_examiners`.
    **kwargs
        Constructor arguments (``random_state=...`` and the strategy's settings).

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
        if sampler not in SAMPLERS:
            raise InputError(f"`examiner` {name!r} names an unknown Optuna sampler; known: {', '.join(SAMPLERS)}.")
        return OptunaExaminer(sampler=sampler, **kwargs)
    if key not in EXAMINERS:
        raise InputError(f"`examiner` must be one of {', '.join(list_examiners())}; got {name!r}.")
    return EXAMINERS[key](**kwargs)
