"""Overfitting-test results survive JSON and render again from the saved form."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fitaudit.data.gaussian_margin import GaussianMargin
from fitaudit.overfit import (
    CITestResult,
    LinearGradientAEG,
    NModelTestResult,
    OverfitTestResult,
    ci_test,
    n_model_test,
    overfit_test,
    train_logistic_models,
)
from fitaudit.report import render, save_figure
from fitaudit.results import Result
from fitaudit.stats import ConfidenceInterval

DIST = GaussianMargin(50)


@pytest.fixture(scope="module")
def setting():
    x, y = DIST.sample(400, random_state=1)
    models = train_logistic_models(x[:200], y[:200], n_models=2, steps=200, random_state=2)
    return models, x[200:], y[200:]


def _round_trip(result):
    saved = json.loads(result.to_json())
    again = Result.from_dict(saved)
    assert type(again) is type(result) and again.to_dict() == result.to_dict()
    return saved, again


def test_overfit_result_round_trip_and_render(setting, tmp_path):
    models, x, y = setting
    result = overfit_test(models[0], x, y, LinearGradientAEG(3.0, DIST))
    saved, again = _round_trip(result)
    assert isinstance(again, OverfitTestResult) and again.pairwise.bound_at(0.1) == result.pairwise.bound_at(0.1)
    text = render(saved, "markdown")
    assert text == render(result, "markdown")
    assert f"| p-value (pairwise test) | {result.pvalue:.4g} |" in text
    assert ("is not independent" in text) == bool(result.reject)
    assert render(saved, "html").startswith("<p>")
    save_figure(render(saved, "figure"), tmp_path / "overfit.png")
    assert (tmp_path / "overfit.png").stat().st_size > 1000


def test_nmodel_and_ci_results_round_trip(setting):
    models, x, y = setting
    nmodel = n_model_test(models, x, y, LinearGradientAEG(3.0, DIST))
    saved, again = _round_trip(nmodel)
    assert isinstance(again, NModelTestResult) and again.per_model == nmodel.per_model
    assert "run 2" in render(saved, "markdown")
    assert len(render(saved, "figure").axes[0].collections) == 1
    loss = (models[0].predict(x) != y).astype(float)
    ci = ci_test(loss, np.clip(loss + 0.3 * (loss == 0), 0, 1), delta=0.05)
    saved, again = _round_trip(ci)
    assert isinstance(again, CITestResult) and isinstance(again.ci_plain, ConfidenceInterval)
    assert again.ci_plain == ci.ci_plain
    assert "R_S and its interval" in render(saved, "markdown")


RUNS: list[int] = []


class CountingAEG(LinearGradientAEG):
    """The linear-gradient AEG, counting its runs (outside itself, so its fingerprint stays put)."""

    def _generate(self, model, x, y):
        RUNS.append(len(x))
        return super()._generate(model, x, y)


def test_overfit_and_nmodel_tests_resume_from_their_aeg_runs(setting, tmp_path):
    models, x, y = setting
    aeg = CountingAEG(3.0, DIST)
    RUNS.clear()
    first = overfit_test(models[0], x, y, aeg, checkpoint_dir=tmp_path)
    again = overfit_test(models[0], x, y, CountingAEG(3.0, DIST), checkpoint_dir=tmp_path)
    assert len(RUNS) == 1 and again.to_dict() == first.to_dict()
    assert overfit_test(models[0], x, y, aeg).to_dict() == first.to_dict()
    RUNS.clear()
    overfit_test(models[1], x, y, aeg, checkpoint_dir=tmp_path)  # another model
    overfit_test(models[0], x[:-1], y[:-1], aeg, checkpoint_dir=tmp_path)  # other data
    overfit_test(models[0], x, y, CountingAEG(2.0, DIST), checkpoint_dir=tmp_path)  # another AEG
    assert len(RUNS) == 3
    RUNS.clear()
    nmodel = n_model_test(models, x, y, aeg, checkpoint_dir=tmp_path)  # both runs are on disk
    assert RUNS == [] and nmodel.per_model[0]["pvalue"] == pytest.approx(first.pvalue)
