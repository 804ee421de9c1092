"""The PMV reproductions (quick mode): their content, their selections, resume and no stale reuse."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.experiments.pmv import (
    MLPWidthReproduction,
    PMVComparisonReproduction,
    TreeDepthReproduction,
    reproduce_pmv_comparison,
    reproduce_pmv_mlp_width,
    reproduce_pmv_tree_depth,
)
from fitaudit.report import load_result, render, save_reproduction


@pytest.mark.slow
def test_comparison_quick_scores_and_selections():
    result = reproduce_pmv_comparison(mode="quick", progress=False)
    assert isinstance(result, PMVComparisonReproduction) and result.experiment == "pmv-comparison"
    assert len(result.classifiers) == 7 and "Tree, no max_depth" in result.classifiers
    (setting,) = result.settings
    assert setting["dataset"] == "moons" and setting["noise"] == 0
    rows = setting["classifiers"]
    assert set(rows) == set(result.classifiers)
    for row in rows.values():
        assert 0 <= row["pmv"] <= 2.5 and 0 <= row["cv_test_accuracy"] <= 1
        assert 0 <= row["cv_gap"] <= 1 and 0 <= row["train_accuracy_r0"] <= 1
    # the unbounded tree memorises the flipped labels: the smallest |k_S|, near 0; PMV never selects it
    assert rows["Tree, no max_depth"]["pmv"] < 0.05
    assert min(rows, key=lambda n: rows[n]["pmv"]) == "Tree, no max_depth"
    assert setting["pmv_selects"] == max(rows, key=lambda n: rows[n]["pmv"]) != "Tree, no max_depth"
    assert setting["cv_selects"] == max(rows, key=lambda n: rows[n]["cv_test_accuracy"])
    assert result.n_agree == int(setting["pmv_selects"] == setting["cv_selects"])


@pytest.mark.slow
def test_tree_depth_quick_pmv_selects_a_bounded_depth(tmp_path):
    store = tmp_path / "checkpoints"
    result = reproduce_pmv_tree_depth(mode="quick", checkpoint_dir=store, progress=False)
    assert isinstance(result, TreeDepthReproduction) and result.depths == [1, 2, 4, 8, None]
    assert [(s["dataset"], s["size"]) for s in result.settings] == [
        ("breast_cancer", "full"), ("breast_cancer", "5%")
    ]
    for s in result.settings:
        for method in ("pmv", "mutation", "grid"):
            assert len(s["chosen_depth"][method]) == 2  # one choice per run
            assert all(d in result.depths for d in s["chosen_depth"][method])
            assert all(0.8 <= a <= 1 for a in s["test_accuracy"][method])  # breast cancer: easy
        assert None not in s["chosen_depth"]["pmv"]  # the documented selection: a bounded depth
        assert len(s["mean_pmv_curve"]) == len(s["mean_cv_curve"]) == len(result.depths)
        assert all(0 <= k <= 2.5 for k in s["mean_pmv_curve"]) and all(0 <= a <= 1 for a in s["mean_cv_curve"])
        assert s["mean_pmv_curve"][-1] < max(s["mean_pmv_curve"])  # the unbounded tree scores low
    assert result.settings[1]["n_train"] < result.settings[0]["n_train"] / 10
    assert render(result, "markdown", brief=True).startswith("PMV chose a bounded depth in 4 of 4 runs")

    units = {p.name: p.stat().st_mtime_ns for p in store.glob("*.json")}
    assert len(units) == 2  # one per (data set, size)
    again = reproduce_pmv_tree_depth(mode="quick", checkpoint_dir=store, progress=False)
    assert again.settings == result.settings
    assert {p.name: p.stat().st_mtime_ns for p in store.glob("*.json")} == units
    reproduce_pmv_tree_depth(mode="quick", checkpoint_dir=store, random_state=1, progress=False)
    assert len(list(store.glob("*.json"))) == 4  # another seed: new units, never the old ones


@pytest.mark.slow
def test_mlp_width_quick_curve(tmp_path):
    result = reproduce_pmv_mlp_width(mode="quick", checkpoint_dir=tmp_path / "ck", progress=False)
    assert isinstance(result, MLPWidthReproduction) and result.widths == [5, 20]
    assert result.n_samples == 360
    assert len(result.pmv) == len(result.validation_error) == len(result.train_error) == 2
    assert all(0 < k <= 2.5 for k in result.pmv)
    assert all(0 <= e <= 0.1 for e in result.validation_error + result.train_error)  # 0 vs 1 is easy
    assert result.pmv_selects == result.widths[int(np.argmax(result.pmv))]
    assert result.validation_selects == result.widths[int(np.argmin(result.validation_error))]
    files = save_reproduction(result, tmp_path)
    saved = json.loads((tmp_path / "pmv-mlp-width-quick.json").read_text())
    assert load_result(saved).to_dict() == saved and files["figure"].endswith("pmv-mlp-width-quick.png")
    assert "| width | PMV abs(k_S) |" in (tmp_path / "pmv-mlp-width-quick.md").read_text()


def test_bad_mode_is_named():
    with pytest.raises(InputError, match="`mode`"):
        reproduce_pmv_mlp_width(mode="huge")
