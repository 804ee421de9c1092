"""The N-model test (Werpachowski et al. 2019, Sec. 3)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.data.gaussian_margin import GaussianMargin
from fitaudit.overfit import (
    LinearGradientAEG,
    n_model_test,
    n_model_test_retrain,
    overfit_test,
    train_logistic_models,
)
from fitaudit.random import spawn_seeds
from fitaudit.stats import bernstein_pvalue

DIST = GaussianMargin(100)


def fit_on(seed: int, *, x: np.ndarray, y: np.ndarray, penalty: float) -> object:
    """A retraining function: one logistic model per seed."""
    return train_logistic_models(x, y, steps=150, first_coordinate_penalty=penalty, random_state=seed)[0]


@pytest.fixture(scope="module")
def dependent_setting():
    x, y = DIST.sample(600, random_state=20)
    fit = functools.partial(fit_on, x=x[:300], y=y[:300], penalty=1e4)
    return x, y, fit


def test_matches_the_average_of_the_pairwise_terms(dependent_setting):
    x, y, fit = dependent_setting
    models = [fit(seed) for seed in (1, 2, 3)]
    aeg = LinearGradientAEG(3.0, DIST)
    result = n_model_test(models, x, y, aeg)
    terms = []
    for model in models:
        loss = (model.predict(x) != y).astype(float)
        terms.append(aeg.generate(model, x, y, loss=loss).weighted_adv_loss - loss)
    mean_terms = np.mean(terms, axis=0)
    t, s2 = mean_terms.mean(), mean_terms.var()
    assert result.statistic == pytest.approx(t)
    assert result.pvalue == pytest.approx(bernstein_pvalue(t, s2, len(x), 2.0))
    assert result.n_models == 3 and result.U == 2.0 and result.m == 600
    for entry, model in zip(result.per_model, models):
        single = overfit_test(model, x, y, aeg)
        assert entry["pvalue"] == pytest.approx(single.pvalue)
        assert entry["risk_plain"] == pytest.approx(single.risk_plain)
        assert entry["seed"] is None
    assert result.to_dict()["per_model"][0].keys() >= {"seed", "risk_plain", "pvalue"}


@pytest.mark.slow
def test_retraining_is_reproducible_and_independent_of_n_jobs(dependent_setting):
    x, y, fit = dependent_setting
    aeg = LinearGradientAEG(20.0, DIST)
    serial = n_model_test_retrain(fit, x, y, aeg, n_models=4, random_state=7)
    parallel = n_model_test_retrain(fit, x, y, aeg, n_models=4, random_state=7, n_jobs=2)
    assert serial.pvalue == parallel.pvalue and serial.per_model == parallel.per_model
    seeds = spawn_seeds(7, 4)
    assert [e["seed"] for e in serial.per_model] == seeds
    direct = n_model_test([fit(s) for s in seeds], x, y, aeg)
    assert direct.pvalue == serial.pvalue
    # averaging over runs shrinks the variance of the terms: p_N <= typical p_j here
    assert serial.reject and serial.pvalue <= np.median([e["pvalue"] for e in serial.per_model])


def test_checkpoints_resume(tmp_path, dependent_setting):
    x, y, fit = dependent_setting
    aeg = LinearGradientAEG(3.0, DIST)
    first = n_model_test_retrain(fit, x, y, aeg, n_models=2, random_state=8, checkpoint_dir=tmp_path)
    files = sorted(tmp_path.glob("*.json"))
    assert len(files) == 2
    stamps = [p.stat().st_mtime_ns for p in files]
    again = n_model_test_retrain(fit, x, y, aeg, n_models=2, random_state=8, checkpoint_dir=tmp_path)
    assert again.pvalue == pytest.approx(first.pvalue)
    assert [p.stat().st_mtime_ns for p in sorted(tmp_path.glob("*.json"))] == stamps
    # another sample or AEG never gets the first one's runs
    n_model_test_retrain(fit, x[:-1], y[:-1], aeg, n_models=2, random_state=8, checkpoint_dir=tmp_path)
    n_model_test_retrain(fit, x, y, LinearGradientAEG(2.0, DIST), n_models=2, random_state=8, checkpoint_dir=tmp_path)
    assert len(list(tmp_path.glob("*.json"))) == 6
    # another training function never gets the first one's runs
    with pytest.raises(AssertionError, match="retrained"):
        n_model_test_retrain(_must_not_run, x, y, aeg, n_models=2, random_state=8, checkpoint_dir=tmp_path)


def _must_not_run(seed: int) -> object:
    raise AssertionError("a different training function must be retrained")


def test_bad_input(dependent_setting):
    x, y, fit = dependent_setting
    aeg = LinearGradientAEG(3.0, DIST)
    with pytest.raises(InputError, match="`models` must hold at least one model"):
        n_model_test([], x, y, aeg)
    with pytest.raises(InputError, match=r"`models` must be a list of models f_1..f_N; got a single LinearModel \(for one"):
        n_model_test(fit(1), x, y, aeg)
    with pytest.raises(InputError, match="`n_models` must be a positive integer"):
        n_model_test_retrain(fit, x, y, aeg, n_models=0)
    with pytest.raises(InputError, match="`fit_fn` must be a function"):
        n_model_test_retrain("fit", x, y, aeg, n_models=2)
    with pytest.raises(InputError, match="`x` must be array-like"):
        n_model_test_retrain(fit, [[0.0, 1.0], [2.0]], y, aeg, n_models=2)
    with pytest.raises(InputError, match="`y` holds label 3"):
        n_model_test([fit(1)], x, np.where(y == 1, 3, 0), aeg)


def test_retraining_on_a_dask_cluster(dependent_setting):
    distributed = pytest.importorskip("distributed")
    import joblib

    x, y, fit = dependent_setting
    aeg = LinearGradientAEG(20.0, DIST)
    local = n_model_test_retrain(fit, x, y, aeg, n_models=2, random_state=9)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster),
        joblib.parallel_config(backend="dask"),
    ):
        on_dask = n_model_test_retrain(fit, x, y, aeg, n_models=2, random_state=9, n_jobs=-1)
    assert on_dask.pvalue == local.pvalue and on_dask.per_model == local.per_model


def test_an_edited_n_model_result_is_refused_on_load(dependent_setting):
    from fitaudit.results import load_result

    x, y, fit = dependent_setting
    saved = n_model_test([fit(seed) for seed in (1, 2)], x, y, LinearGradientAEG(3.0, DIST)).to_dict()
    assert load_result(saved).n_models == 2
    for field, value in (("reject", not saved["reject"]), ("n_models", 5), ("pvalue", saved["pvalue"] / 2 + 0.3)):
        with pytest.raises(InputError, match=field):
            load_result({**saved, field: value})
