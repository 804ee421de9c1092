"""Metric 2 of the PGDL competition exactly as its official scoring program computes it.

The NeurIPS 2020 "Predicting Generalization in Deep Learning" competition
(Jiang et al.) ranked submissions by a conditional mutual information
computed by ``scoring_program/mutual_information.py``; this module gives
the same number (docs/pgdl.md#conditional-mutual-information-official-metric-2,
steps 1-6), vectorised with numpy:

1. ``gap = train_acc - test_acc`` per model; the hyperparameter names and
   their possible values are those of the first model's entry.
2. For every *ordered* pair (h1, h2) of distinct hyperparameters, the bins
   are all ``|P1|^2 |P2|^2`` combinations ``(h1_a, h1_b, h2_a, h2_b)``.
3. Every ordered pair of models (a, b), self-pairs included, falls in the
   bin of its values; ``V_g = +`` iff ``gap_a > gap_b`` and ``V_mu = +`` iff
   ``mu_a > mu_b``, strictly, so ties and self-pairs are ``(-, -)``.
4. Per bin, ``I(V_mu; V_g)`` over the non-zero cells in bits and
   ``H(V_g) = -sum_i p_i log2(p_i + 1e-12)`` (the 1e-12 only there).
5. Score of (h1, h2) = mean of I over all bins / mean of H over all bins
   (unweighted).
6. Task score = minimum over the ordered pairs (the competition's
   leaderboard showed 100 x the mean over tasks).

What the metric cannot see (consequences of the algorithm, kept on purpose):

* one hyperparameter gives no pair: the official program returns ``inf``;
  :func:`official_cmi` raises :class:`~fitaudit.InputError` instead;
* two hyperparameters put exactly one model pair in each bin, so every
  bin's I is 0 and the score is 0 (``-0.0``: the smoothed entropy of a
  one-pair bin is about ``-1.4e-12``) whatever the measure: the metric needs
  at least 3 hyperparameters;
* it is only partly sensitive to the measure's sign: a negated measure
  still scores well (mutual information ignores the direction of the
  dependence, apart from the (-, -) ties), unlike Kendall's tau;
* a perfect measure scores very slightly above 1 (the 1e-12 in the entropy
  only);
* an empty bin gives NaN in the official program (0 / 0); on a complete
  grid no bin is empty, and the inputs that would empty one are refused
  here (below).

Where the official program prints and skips, or crashes, this module raises
:class:`~fitaudit.InputError` with the reason: an incomplete or duplicated
grid, measure values missing or for unknown models, a NaN or ``'EXCEEDED'``
value, a ``current_value`` written differently from the grid's possible
value (``256.0`` vs ``256``: the official bins are keyed by ``str()``, so
it drops that model's pairs after printing a KeyError), and possible values
whose string concatenations collide (``"1" + "11" == "11" + "1"``: the
official program merges those bins and leaves one empty, giving NaN).
``values="numeric"`` is the documented normalisation of the ``256.0`` case
(values matched by equality, as the official grid check does).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from fitaudit._errors import InputError
from fitaudit.pgdl._pairs import (
    OFFICIAL_ENTROPY_EPS,
    count_cells,
    pair_cells,
    pair_codes,
    table_information,
)
from fitaudit.pgdl.grid import Grid, align_measure, read_model_configs


def _check_bin_keys(grid: Grid, first: int, second: int) -> None:
    """Refuse grids whose official bin keys (str concatenations) collide."""
    strings = [[str(v) for v in grid.values[first]], [str(v) for v in grid.values[second]]]
    keys = {
        a1 + b1 + a2 + b2
        for a1, b1 in itertools.product(strings[0], repeat=2)
        for a2, b2 in itertools.product(strings[1], repeat=2)
    }
    expected = (len(strings[0]) * len(strings[1])) ** 2
    if len(keys) != expected:
        raise InputError(
            f"`model_configs`: the possible values of {grid.names[first]!r} {list(grid.values[first])} "
            f"and {grid.names[second]!r} {list(grid.values[second])} give colliding bin keys in the official "
            "program (it concatenates str() of the values), which merges bins and scores NaN; "
            "pass values='numeric' to bin by value index instead."
        )


def official_cmi_pairs(model_configs: Any, measure: Any, *, values: str = "exact") -> dict[tuple[str, str], float]:
    """The official score of every ordered pair of hyperparameters (see :func:`official_cmi`)."""
    grid = read_model_configs(model_configs, values=values)
    mu = align_measure(grid, measure)
    if len(grid.names) < 2:
        raise InputError(
            f"`model_configs` has a single hyperparameter ({grid.names[0]!r}): the official metric "
            "conditions on pairs of hyperparameters and returns inf with one (it needs at least 3 "
            "to say anything; see the module docstring)."
        )
    cells = pair_cells(mu, grid.gap)
    codes = pair_codes(grid.codes, grid.sizes)
    codes_and_cells = [4 * code + cells for code in codes]
    scores: dict[tuple[str, str], float] = {}
    for first, second in itertools.permutations(range(len(grid.names)), 2):
        if values == "exact":
            _check_bin_keys(grid, first, second)
        # bin = code(h1) * |P2|^2 + code(h2); flat index = bin * 4 + cell
        n_second = grid.sizes[second] ** 2
        flat = codes[first] * (4 * n_second) + codes_and_cells[second]
        tables = count_cells(flat, grid.sizes[first] ** 2 * n_second)
        information, entropy = table_information(tables, OFFICIAL_ENTROPY_EPS)
        with np.errstate(divide="ignore", invalid="ignore"):
            scores[(grid.names[first], grid.names[second])] = float(np.mean(information) / np.mean(entropy))
    return scores


def official_cmi(model_configs: Any, measure: Any, *, values: str = "exact") -> float:
    """The PGDL competition's task score (Metric 2), before the x100.

    Parameters
    ----------
    model_configs : mapping
        The parsed ``model_configs.json`` of a task: model id ->
        ``{"hparams": {name: {"possible_values", "current_value"}},
        "metrics": {"train_acc", "test_acc"}}``.
    measure : mapping
        Model id -> measure value (larger = larger predicted gap); ids with
        or without the ``model_`` prefix, as the competition's files have them
        (the official program adds the prefix to the configs' ids only, so
        a prediction keyed by bare ids would miss every lookup there).
    values : {"exact", "numeric"}
        ``"exact"``: hyperparameter values matched as the official bins see
        them (by ``str``); ``"numeric"``: by equality (a documented
        normalisation; see :func:`fitaudit.pgdl.grid.read_model_configs`).

    Returns
    -------
    float
        ``min over ordered pairs (h1, h2) of mean_bins I / mean_bins H``,
        the number the official ``conditional_mutual_information`` returns
        on a complete grid (to rounding). Slightly above 1 for a perfect
        measure; 0 with exactly two hyperparameters.

    Raises
    ------
    InputError
        Where the official program would print and skip or crash (see the
        module docstring), or with a single hyperparameter.

    Examples
    --------
    >>> configs = json.load(open("task/model_configs.json"))        # doctest: +SKIP
    >>> official_cmi(configs, {"model_1": 0.3, "model_2": 1.2, ...})  # doctest: +SKIP
    """
    return min(official_cmi_pairs(model_configs, measure, values=values).values())
