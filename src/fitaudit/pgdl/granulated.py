"""Granulated Kendall coefficient Psi (Metric 1 of the PGDL protocol).

Jiang et al., "Fantastic generalization measures and where to find them"
(ICLR 2020), eq. (3)-(4); docs/pgdl.md#granulated-kendall-psi-metric-1. For each hyperparameter
``i``, the models are grouped by their values of *every other*
hyperparameter; Kendall's tau (tau-a, :func:`~fitaudit.pgdl.kendall_tau`)
between measure and gap is computed inside each group, and ``psi_i`` is
the mean over the groups:

    psi_i = (1 / m_i) sum_{groups} tau(group),      Psi = (1 / H) sum_i psi_i

So ``psi_i`` asks whether the measure follows the gap when only
hyperparameter ``i`` changes. Groups with a single model carry no pair and
are left out; a hyperparameter with no group of two or more models (it
takes one value only) gets ``psi_i = None`` and is left out of Psi; both
are listed in the result.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit.pgdl.grid import check_hparams
from fitaudit.pgdl.kendall import check_scores, kendall_tau
from fitaudit.results import Result


@dataclasses.dataclass(repr=False)
class GranulatedKendall(Result):
    """Psi and its parts.

    Attributes
    ----------
    psi : float
        Mean of ``per_hparam`` over the hyperparameters that have one.
    per_hparam : dict
        ``psi_i`` per hyperparameter (None where no group has two models).
    n_groups : dict
        Number of groups of two or more models behind each ``psi_i``.
    """

    psi: float
    per_hparam: dict[str, float | None]
    n_groups: dict[str, int]


def granulated_kendall(measure: Any, gap: Any, hparams: Any) -> GranulatedKendall:
    """Granulated Kendall's Psi of a measure over a population of models.

    Parameters
    ----------
    measure, gap : array-like of shape (n,)
        Measure and generalization gap per model.
    hparams : mapping or sequence of mappings
        Hyperparameter name -> one value per model (or one mapping
        name -> value per model). Values that compare equal are one value.

    Returns
    -------
    GranulatedKendall
        ``psi`` and ``per_hparam`` (``psi_i``), with the group counts.

    Raises
    ------
    InputError
        Mismatched lengths, NaN values, or no hyperparameter with a group
        of two models.
    """
    mu, g = check_scores(measure, gap)
    names, codes, _ = check_hparams(hparams, mu.size)
    per_hparam: dict[str, float | None] = {}
    n_groups: dict[str, int] = {}
    for column, name in enumerate(names):
        others = np.delete(codes, column, axis=1)
        if others.shape[1]:
            _, group = np.unique(others, axis=0, return_inverse=True)
            group = group.ravel()
        else:
            group = np.zeros(mu.size, dtype=np.int64)
        taus = [
            kendall_tau(mu[members], g[members])
            for members in (np.flatnonzero(group == k) for k in range(int(group.max()) + 1))
            if members.size >= 2
        ]
        n_groups[name] = len(taus)
        per_hparam[name] = float(np.mean(taus)) if taus else None
    defined = [v for v in per_hparam.values() if v is not None]
    if not defined:
        raise InputError(
            "`hparams`: no hyperparameter has two models that agree on all the others, so no psi_i is defined."
        )
    return GranulatedKendall(psi=float(np.mean(defined)), per_hparam=per_hparam, n_groups=n_groups)
