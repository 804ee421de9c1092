"""score_task with n_jobs > 1: work the measures share on a model runs once per model, values as with n_jobs 1."""

from __future__ import annotations

import joblib
import pytest
from _shared_work import SharedSearchA, SharedSearchB, searched_models

from fitaudit.measures import get_measure
from fitaudit.options import RunOptions
from fitaudit.pgdl.harness import _Ledger, _Plan, score_task

MODELS = [str(i) for i in range(8)]  # the tiny task's model ids


def _shared(log: str) -> list:
    return [SharedSearchA(log=log), SharedSearchB(log=log)]


def test_the_plan_has_one_unit_per_model_with_its_pending_measures() -> None:
    measures = [get_measure("weight_norm"), get_measure("parameter_count")]
    ledger = _Ledger(measures, ["a", "b", "c"], budget=None)
    plan = _Plan(["a", "b", "c"], ["weight_norm", "parameter_count"], {("a", "weight_norm"), ("b", "weight_norm"),
                                                                     ("b", "parameter_count")}, ledger)  # fmt: skip
    assert plan.units == [("a", ["parameter_count"]), ("c", ["weight_norm", "parameter_count"])]  # b is done
    assert not plan.skip(1) and plan.units[1] == ("c", ["weight_norm", "parameter_count"])


def test_the_plan_drops_measures_over_budget_before_dispatch() -> None:
    measures = [get_measure("weight_norm"), get_measure("parameter_count")]
    ledger = _Ledger(measures, ["a", "b"], budget=1.0)
    plan = _Plan(["a", "b"], ["weight_norm", "parameter_count"], set(), ledger)
    ledger.add("weight_norm", "a", {"value": 1.0, "seconds": 2.0, "error": None})
    assert not plan.skip(1) and plan.units[1] == ("b", ["parameter_count"])
    ledger.add("parameter_count", "a", {"value": 1.0, "seconds": 2.0, "error": None})
    assert plan.skip(1)  # nothing left on model b: not dispatched


@pytest.mark.parametrize("n_jobs", [1, 2])
@pytest.mark.slow
def test_a_shared_search_runs_once_per_model(tiny_pgdl_task, tmp_path, n_jobs) -> None:
    """With worker processes (joblib's default backend) too: the log is written by whichever process searched."""
    log = str(tmp_path / "searches.log")
    result = score_task(tiny_pgdl_task, _shared(log), options=RunOptions(n_jobs=n_jobs, progress=False))
    assert sorted(searched_models(log)) == MODELS  # 8 searches for 16 (measure, model) units
    a, b = result.score("shared_search_a"), result.score("shared_search_b")
    assert all(b.values[i] == 2 * a.values[i] for i in MODELS)


@pytest.mark.slow
def test_a_resumed_run_reuses_finished_units_and_searches_only_for_the_rest(tiny_pgdl_task, tmp_path) -> None:
    log = str(tmp_path / "searches.log")
    first = score_task(tiny_pgdl_task, [SharedSearchA(log=log)], options=RunOptions(n_jobs=2, progress=False), checkpoint_dir=tmp_path / "ck")
    assert first.reused_units == 0 and sorted(searched_models(log)) == MODELS
    both = score_task(tiny_pgdl_task, _shared(log), options=RunOptions(n_jobs=2, progress=False), checkpoint_dir=tmp_path / "ck")
    assert both.reused_units == 8  # shared_search_a on every model
    assert both.score("shared_search_a").values == first.score("shared_search_a").values
    assert both.score("shared_search_a").seconds == first.score("shared_search_a").seconds  # recorded times
    assert sorted(searched_models(log)) == sorted(MODELS * 2)  # shared_search_b searched once per model
    again = score_task(tiny_pgdl_task, _shared(log), options=RunOptions(n_jobs=2, progress=False), checkpoint_dir=tmp_path / "ck")
    assert again.reused_units == 16 and len(searched_models(log)) == 16  # nothing ran
    assert again.score("shared_search_b").values == both.score("shared_search_b").values


@pytest.mark.slow
def test_pacbayes_values_with_worker_processes_are_bitwise_those_of_one_process(tiny_pgdl_task) -> None:
    settings = {"search_depth": 4, "montecarlo_samples": 2}
    names = ["pacbayes_init", "pacbayes_orig", "pacbayes_flatness", "pacbayes_mag_init", "pacbayes_mag_flatness"]

    def measures() -> list:
        return [get_measure(name, random_state=3, **settings) for name in names]

    serial = score_task(tiny_pgdl_task, measures(), options=RunOptions(progress=False))
    with joblib.parallel_config(backend="loky"):
        parallel = score_task(tiny_pgdl_task, measures(), options=RunOptions(n_jobs=2, progress=False))
    for name in names:
        assert parallel.score(name).values == serial.score(name).values
        assert all(v is not None for v in serial.score(name).values.values())


def test_the_cli_says_what_a_resumed_run_reused(tiny_pgdl_task, tmp_path, capsys) -> None:
    from fitaudit.cli import main

    argv = ["pgdl", "score", "--task", str(tiny_pgdl_task), "--quiet", "--checkpoint-dir", str(tmp_path / "ck")]
    assert main([*argv, "--measure", "weight_norm"]) == 0
    assert "Reused" not in capsys.readouterr().out
    assert main([*argv, "--measure", "weight_norm,parameter_count"]) == 0
    assert "Reused 8 of 16 (measure, model) units from --checkpoint-dir" in capsys.readouterr().out
