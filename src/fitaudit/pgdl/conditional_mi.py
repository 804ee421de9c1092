"""Conditional mutual information between measure and gap, the general form.

The PGDL competition proposal (Jiang et al., 2020) and "Fantastic
generalization measures" (Jiang et al., ICLR 2020, sec. 6) define the
score of a measure as

    K(mu) = min over conditioning sets O, |O| <= k, of I(V_mu; V_g | U_O) / H(V_g | U_O)

over pairs of models (a, b), with ``V_g = +`` iff ``gap_a > gap_b``,
``V_mu = +`` iff ``mu_a > mu_b`` (strict: ties are ``-``) and ``U_O`` the
values of the hyperparameters in ``O`` for both models. Conditional
quantities are averages over the groups ``u`` of ``U_O`` *weighted by the
group's share of the pairs*: ``I(.|U_O) = sum_u p(u) I_u`` and likewise
``H``; entropies use ``0 log 0 = 0`` (no smoothing). The empty set is
included, so ``K <= I(V_mu; V_g) / H(V_g)``. If ``H(V_g | U_O) = 0`` the gap's
order is fixed by ``O`` and the measure cannot add information: the ratio
is 0 (the limit the official program's smoothing gives).

This is *not* the competition's leaderboard number: that is
:func:`fitaudit.pgdl.official_cmi`, which conditions on ordered pairs of
hyperparameters only, includes self-pairs and averages bins unweighted.
On a complete grid, sets of size exactly 2 with ``self_pairs=True`` give
the same numbers (every bin then holds the same number of pairs) up to
the official 1e-12 smoothing.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit._validation import check_int
from fitaudit.pgdl._pairs import bin_tables, pair_bins, pair_cells, pair_codes, table_information
from fitaudit.pgdl.grid import check_hparams
from fitaudit.pgdl.kendall import check_scores
from fitaudit.results import Result


@dataclasses.dataclass(repr=False)
class ConditionalMI(Result):
    """The general conditional-MI score and the ratio of every conditioning set.

    Attributes
    ----------
    score : float
        Minimum of ``per_set``.
    argmin : list of str
        The conditioning set reaching it (``[]`` is the empty set).
    per_set : dict
        ``"h1,h2"`` (``""`` for the empty set) -> ``I(V_mu; V_g | O) / H(V_g | O)``.
    max_set_size : int
    self_pairs : bool
    """

    score: float
    argmin: list[str]
    per_set: dict[str, float]
    max_set_size: int
    self_pairs: bool

    def _summary_fields(self) -> list[str]:
        return ["score", "argmin", "max_set_size", "self_pairs"]


def conditional_mi(
    measure: Any, gap: Any, hparams: Any, *, max_set_size: int = 2, self_pairs: bool = False
) -> ConditionalMI:
    """``min_O I(V_mu; V_g | U_O) / H(V_g | U_O)`` over sets of at most ``max_set_size`` hyperparameters.

    Parameters
    ----------
    measure, gap : array-like of shape (n,)
        Measure and generalization gap per model.
    hparams : mapping or sequence of mappings
        Hyperparameter name -> one value per model (or per-model mappings);
        the grid need not be complete.
    max_set_size : int
        Largest conditioning set (``0``: only the unconditional ratio).
        Fantastic and the competition proposal use 2.
    self_pairs : bool
        Count each model paired with itself (as ``(-, -)``), as the official
        program does. Default: ordered pairs of distinct models.

    Returns
    -------
    ConditionalMI
    """
    mu, g = check_scores(measure, gap)
    names, codes, sizes = check_hparams(hparams, mu.size)
    max_set_size = check_int(max_set_size, "max_set_size", minimum=0)
    if max_set_size > len(names):
        raise InputError(
            f"`max_set_size` must be at most the number of hyperparameters ({len(names)}); got {max_set_size}."
        )
    cells = pair_cells(mu, g)
    mask = None if self_pairs else ~np.eye(mu.size, dtype=bool)
    per_hparam = pair_codes(codes, sizes)
    per_set: dict[str, float] = {}
    best: tuple[float, list[str]] = (np.inf, [])
    for size in range(max_set_size + 1):
        for columns in itertools.combinations(range(len(names)), size):
            bins, n_bins = pair_bins(per_hparam, sizes, columns)
            tables = bin_tables(cells, bins, n_bins, mask)
            weights = tables.sum(axis=(1, 2))
            used = weights > 0
            information, entropy = table_information(tables[used], 0.0)
            share = weights[used] / weights.sum()
            conditional_entropy = float(share @ entropy)
            ratio = float(share @ information) / conditional_entropy if conditional_entropy > 0 else 0.0
            per_set[",".join(names[c] for c in columns)] = ratio
            if ratio < best[0]:
                best = (ratio, [names[c] for c in columns])
    return ConditionalMI(
        score=best[0],
        argmin=best[1],
        per_set=per_set,
        max_set_size=max_set_size,
        self_pairs=bool(self_pairs),
    )
