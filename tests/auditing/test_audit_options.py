"""fitaudit.audit takes how it runs as one RunOptions (as score_task and leaderboard do), not keyword by keyword."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

import fitaudit
from fitaudit import InputError, RunOptions
from fitaudit.random import as_seed


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(80, 3))
    y = (x[:, 0] > 0).astype(int)
    return LogisticRegression().fit(x[:40], y[:40]), (x[40:], y[40:])


def test_the_seed_and_workers_of_the_options_are_the_audits(fitted):
    model, test = fitted
    result = fitaudit.audit(model, test, checks=[], options=RunOptions(random_state=7, n_jobs=1, progress=False))
    assert result.random_state == as_seed(7) and result.settings["n_jobs"] == 1
    assert result.settings["dask_scheduler"] is None
    default = fitaudit.audit(model, test, checks=[], options=RunOptions(progress=False))
    assert default.random_state == as_seed(RunOptions().random_state)


def test_the_options_backend_holds_for_the_whole_audit(fitted, monkeypatch):
    import fitaudit.auditing as auditing

    entered = []

    @contextlib.contextmanager
    def recording(backend):
        entered.append(backend)
        yield

    monkeypatch.setattr(auditing, "using_backend", recording)
    model, test = fitted
    fitaudit.audit(model, test, checks=[], options=RunOptions(backend="eager", progress=False))
    assert entered == ["eager"]


def test_bad_options_are_refused_naming_the_argument(fitted, tmp_path):
    model, test = fitted
    with pytest.raises(InputError, match=r"`options` must be a fitaudit.options.RunOptions; got dict"):
        fitaudit.audit(model, test, options={"progress": False})
    with pytest.raises(InputError, match="n_jobs"):
        fitaudit.audit(model, test, checkpoint_dir=tmp_path, options=RunOptions(n_jobs=0, progress=False))
    assert not (tmp_path / "parts").exists()  # refused before any part ran


@pytest.mark.parametrize("keyword", ["n_jobs", "dask_scheduler", "random_state", "progress", "trust_code", "device"])
def test_the_run_settings_have_one_spelling(fitted, keyword):
    model, test = fitted
    with pytest.raises(TypeError, match=keyword):
        fitaudit.audit(model, test, **{keyword: None})
