"""RunOptions: one frozen value for how a computation runs (fitaudit.options)."""

from __future__ import annotations

import dataclasses

import pytest

from fitaudit._errors import InputError
from fitaudit.models.inference.settings import default_backend
from fitaudit.options import RunOptions, as_options


def test_the_options_are_frozen_and_replace_makes_a_copy():
    options = RunOptions(n_jobs=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.n_jobs = 3  # type: ignore[misc]
    other = options.replace(device="meta")
    assert (options.device, other.device, other.n_jobs) == ("cpu", "meta", 2)


def test_none_means_the_defaults_and_anything_else_is_refused_by_name():
    assert as_options(None) == RunOptions()
    with pytest.raises(InputError, match="`options` must be a fitaudit.options.RunOptions; got dict"):
        as_options({"n_jobs": 2})


def test_running_applies_the_backend_inside_the_block_only():
    before = default_backend()
    with RunOptions(backend="eager").running():
        assert default_backend() == "eager"
    assert default_backend() == before


def test_every_function_of_the_pgdl_harness_takes_options_not_the_seven_keywords():
    import inspect

    from fitaudit.pgdl.harness import score_task
    from fitaudit.pgdl.leaderboard import leaderboard, rank_models
    from fitaudit.pgdl.zoo import build_zoo
    from fitaudit.pgdl.zoo_task import build_zoo_task

    seven = {"device", "backend", "n_jobs", "dask_scheduler", "random_state", "progress", "trust_code"}
    assert {f.name for f in dataclasses.fields(RunOptions)} == seven
    for function in (score_task, leaderboard, rank_models, build_zoo, build_zoo_task):
        parameters = set(inspect.signature(function).parameters)
        assert "options" in parameters and not parameters & seven, function.__name__
