"""Kendall's tau-a against scipy and by hand; granulated Kendall Psi."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
from scipy.stats import kendalltau

from fitaudit import InputError
from fitaudit.pgdl import granulated_kendall, kendall_tau


@pytest.mark.parametrize("seed", range(5))
def test_tau_equals_scipy_without_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    gap = rng.normal(size=40)
    measure = gap + rng.normal(scale=1.0, size=40)
    assert kendall_tau(measure, gap) == pytest.approx(kendalltau(measure, gap).statistic, abs=1e-12)


def test_tau_a_with_ties_by_hand() -> None:
    measure = [1, 1, 2, 3]
    gap = [0.1, 0.2, 0.2, 0.4]
    # pairs: (0,1) tie in mu -> 0; (0,2) +; (0,3) +; (1,2) tie in gap -> 0; (1,3) +; (2,3) + -> 4 / 6
    assert kendall_tau(measure, gap) == pytest.approx(4 / 6)
    assert kendalltau(measure, gap).statistic == pytest.approx(4 / 5)  # tau-b divides differently
    assert kendall_tau([1, 2, 3], [3, 2, 1]) == -1.0
    assert kendall_tau([5, 5, 5], [1, 2, 3]) == 0.0


def test_tau_handles_infinities_and_large_inputs() -> None:
    assert kendall_tau([-np.inf, 0.0, np.inf], [1, 2, 3]) == 1.0
    rng = np.random.default_rng(0)
    x = rng.normal(size=2500)  # more than one chunk of rows
    y = x + rng.normal(size=2500)
    assert kendall_tau(x, y) == pytest.approx(kendalltau(x, y).statistic, abs=1e-12)


def test_tau_bad_input() -> None:
    with pytest.raises(InputError, match=re.escape("`measure` and `gap` must have one value per model each; got 3 and 2.")):
        kendall_tau([1, 2, 3], [1, 2])
    with pytest.raises(InputError, match=re.escape("`gap` has NaN at positions [1].")):
        kendall_tau([1, 2, 3], [1, float("nan"), 2])
    with pytest.raises(InputError, match="at least 2 models"):
        kendall_tau([1], [1])
    with pytest.raises(InputError, match="1-D"):
        kendall_tau([[1, 2]], [[1, 2]])


def test_granulated_kendall_by_hand() -> None:
    # 2 x 2 grid; the measure follows the gap along "a" in both groups, against it along "b" in one
    hparams = {"a": [0, 1, 0, 1], "b": [0, 0, 1, 1]}
    gap = [0.1, 0.2, 0.3, 0.25]
    measure = [1.0, 2.0, 3.0, 4.0]
    result = granulated_kendall(measure, gap, hparams)
    # along a: groups b=0 -> (0,1): +1; b=1 -> (2,3): gap falls, measure rises: -1  => psi_a = 0
    # along b: groups a=0 -> (0,2): +1; a=1 -> (1,3): +1                             => psi_b = 1
    assert result.per_hparam == {"a": 0.0, "b": 1.0}
    assert result.n_groups == {"a": 2, "b": 2}
    assert result.psi == 0.5


def test_granulated_kendall_groups_agree_on_all_other_hparams() -> None:
    rng = np.random.default_rng(1)
    grid = list(itertools.product([1, 2, 3], [10, 20], ["x", "y"]))
    hparams = [{"p": a, "q": b, "r": c} for a, b, c in grid]
    gap = rng.normal(size=len(grid))
    measure = gap + rng.normal(size=len(grid))
    result = granulated_kendall(measure, gap, hparams)
    expected = []
    for name in ("p", "q", "r"):
        taus = []
        others = [h for h in ("p", "q", "r") if h != name]
        keys = {tuple(h[o] for o in others) for h in hparams}
        for key in keys:
            idx = [i for i, h in enumerate(hparams) if tuple(h[o] for o in others) == key]
            taus.append(kendalltau(measure[idx], gap[idx]).statistic)  # no ties in continuous data
        assert result.per_hparam[name] == pytest.approx(np.mean(taus))
        expected.append(np.mean(taus))
    assert result.psi == pytest.approx(np.mean(expected))


def test_granulated_constant_hparam_is_listed_and_left_out() -> None:
    result = granulated_kendall([1, 2, 3], [1, 2, 3], {"a": [1, 2, 3], "c": [7, 7, 7]})
    assert result.per_hparam == {"a": 1.0, "c": None}
    assert result.psi == 1.0
    with pytest.raises(InputError, match="no hyperparameter has two models"):
        granulated_kendall([1, 2], [1, 2], {"a": [1, 2], "b": [3, 4]})
    with pytest.raises(InputError, match=re.escape("`hparams['a']` must have one value per model (3); got 2.")):
        granulated_kendall([1, 2, 3], [1, 2, 3], {"a": [1, 2]})
