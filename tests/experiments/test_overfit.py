"""The overfit reproductions (quick mode): content, resume from checkpoints, no stale reuse."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fitaudit.experiments.overfit import (
    OverfitShapesReproduction,
    SyntheticReproductionResult,
    reproduce_overfit_shapes,
    reproduce_overfit_synthetic,
)
from fitaudit.report import load_result, render, save_reproduction

#: every test here takes seconds (README.md: the fast command leaves them out)
pytestmark = pytest.mark.slow


def _units(folder):
    return {p.name: p.stat().st_mtime_ns for p in folder.glob("*.json")}


def test_synthetic_quick_rejects_the_dependent_case_in_mid_eps_only(tmp_path):
    store = tmp_path / "checkpoints"
    result = reproduce_overfit_synthetic(
        mode="quick", repetitions=1, steps=200, checkpoint_dir=store, progress=False
    )
    assert isinstance(result, SyntheticReproductionResult) and result.experiment == "overfit-synthetic"
    eps = np.array(result.eps)
    assert eps[0] == 0.01 and eps[-1] == 100 and result.n_values == [1, 2, 10]
    dependent = np.array(result.mean_pvalue["dependent"])
    independent = np.array(result.mean_pvalue["independent"])
    assert dependent.shape == independent.shape == (3, len(eps))
    assert np.all((dependent >= 0) & (dependent <= 1)) and np.all((independent >= 0) & (independent <= 1))
    assert np.all(independent > 0.05)  # never rejected
    assert np.all(dependent[:, 0] == 1.0)  # eps -> 0: nothing moves
    rejected = result.rejected_eps("dependent")
    assert rejected and eps[0] < min(rejected) and max(rejected) < eps[-1]  # somewhere in mid eps
    assert result.rejected_eps("independent") == []
    assert 0.2 < result.mean_error_rate["dependent"] < 0.3  # 0 on the trained half, ~1/2 elsewhere
    assert 0.3 < result.mean_error_rate["independent"] < 0.5
    assert render(result, "markdown", brief=True).startswith("Reproduced: the model trained on half")

    units = _units(store)
    assert len(units) == 2  # one unit per (case, repetition)
    again = reproduce_overfit_synthetic(
        mode="quick", repetitions=1, steps=200, checkpoint_dir=store, progress=False
    )
    assert again.mean_pvalue == result.mean_pvalue and _units(store) == units  # read back, not recomputed
    changed = reproduce_overfit_synthetic(
        mode="quick", repetitions=1, steps=150, checkpoint_dir=store, progress=False
    )
    assert len(_units(store)) == 4  # a changed setting computes new units
    assert changed.mean_error_rate != result.mean_error_rate


def test_saved_reproduction_renders_again(tmp_path):
    result = reproduce_overfit_synthetic(mode="quick", repetitions=1, steps=100, progress=False)
    files = save_reproduction(result, tmp_path)
    assert set(files) == {"json", "markdown", "figure"}
    saved = json.loads((tmp_path / "overfit-synthetic-quick.json").read_text())
    assert saved == json.loads(json.dumps(result.to_dict()))
    assert "| eps | N = 1 | N = 2 | N = 10 |" in (tmp_path / "overfit-synthetic-quick.md").read_text()
    assert (tmp_path / "overfit-synthetic-quick.png").stat().st_size > 10_000
    revived = load_result(saved)
    assert isinstance(revived, SyntheticReproductionResult) and revived.mean_pvalue == result.mean_pvalue


def test_shapes_quick_curves_and_resume(tmp_path):
    pytest.importorskip("torch")
    store = tmp_path / "checkpoints"
    result = reproduce_overfit_shapes(mode="quick", checkpoint_dir=store, progress=False)
    assert isinstance(result, OverfitShapesReproduction)
    assert result.mode == "quick" and result.margin == 3 * result.eps
    assert result.layout["wrap"] and result.layout["margin"] == result.margin
    assert 0 <= result.train_accuracy <= 1 and 0 <= result.test_accuracy <= 1
    assert result.training["architecture"] == "shapes_alexnet"
    assert set(result.curves) == {"train", "test"}
    for name, per_variant in result.curves.items():
        assert set(per_variant) == {"strongest", "nearest", "random", "random2"}
        for entry in per_variant.values():
            assert len(entry["pairwise"]) == len(result.sizes) == len(entry["pairwise_reject"])
            assert all(0 <= p <= 1 for p in entry["pairwise"] + entry["ci"] + [entry["full_pvalue"]])
            assert 0 <= entry["success_rate"] <= 1 and entry["risk_adversarial"] >= 0
            # the AEG's clean losses are the CNN's errors on the centre crops
            assert entry["risk_plain"] == pytest.approx(1 - getattr(result, f"{name}_accuracy"))
    markdown = render(result, "markdown")
    assert "| train | strongest |" in markdown and "(G3)" in markdown
    # run again: the CNN and the AEG terms come from the checkpoints, the numbers are the same
    again = reproduce_overfit_shapes(mode="quick", checkpoint_dir=store, progress=False)
    assert again.curves == result.curves and again.train_accuracy == result.train_accuracy
    other_seed = reproduce_overfit_shapes(mode="quick", checkpoint_dir=store, random_state=1, progress=False)
    assert other_seed.curves != result.curves  # another seed is another data set and CNN, never the old terms
