"""parallel_map: same results locally, with n_jobs=2 and on a Dask cluster; resume."""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path

import joblib
import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from fitaudit import InputError
from fitaudit._errors import WorkerError
from fitaudit.parallel import check_n_jobs, parallel_map
from fitaudit.random import spawn_seeds


def bootstrap_fit(seed: int) -> list[float]:
    """A unit of real work: fit a logistic regression on a bootstrap sample."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(60, 3))
    y = (x @ np.array([1.0, -2.0, 0.5]) + rng.normal(size=60) > 0).astype(int)
    rows = rng.integers(0, 60, size=60)
    model = LogisticRegression().fit(x[rows], y[rows])
    return [float(v) for v in model.coef_.ravel()]


def worker_address(_: int) -> str:
    from distributed import get_worker

    return get_worker().address


def logged_square(item: int, log_dir: str) -> int:
    """Square ``item``, leaving a file per call; raise while a file ``fail-ITEM`` exists.

    The failure is triggered from outside the function's arguments, so the
    failing and the resumed run have the same checkpoint keys.
    """
    if (Path(log_dir).parent / f"fail-{item}").exists():
        raise RuntimeError(f"unit {item} failed")
    (Path(log_dir) / f"{item}-{len(list(Path(log_dir).iterdir()))}").touch()
    return item * item


def fail_after_others(item: int, checkpoints: str) -> int:
    """Unit 0 fails once the checkpoints of units 1-3 are on disk; the others succeed."""
    if item == 0:
        deadline = time.monotonic() + 20
        while len(list(Path(checkpoints).glob("*.json"))) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        raise RuntimeError("unit 0 failed last")
    return item


@pytest.fixture(scope="module")
def seeds() -> list[int]:
    return spawn_seeds(7, 6)


@pytest.fixture(scope="module")
def sequential(seeds) -> list[list[float]]:
    return [bootstrap_fit(s) for s in seeds]


@pytest.mark.slow
def test_local_runs_match_sequential(seeds, sequential):
    assert parallel_map(bootstrap_fit, seeds) == sequential
    assert parallel_map(bootstrap_fit, seeds, n_jobs=2) == sequential


def test_dask_cluster_matches_local(seeds, sequential):
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
        joblib.parallel_config(backend="dask"),
    ):
        on_dask = parallel_map(bootstrap_fit, seeds, n_jobs=-1)
        addresses = parallel_map(worker_address, range(4), n_jobs=-1)
        workers = set(client.scheduler_info()["workers"])
    assert on_dask == sequential
    assert set(addresses) <= workers and addresses


def test_results_keep_item_order():
    items = [5, 3, 9, 1, 7]
    assert parallel_map(functools.partial(pow, exp=2), items, n_jobs=2) == [25, 9, 81, 1, 49]
    assert parallel_map(abs, []) == []


def test_checkpoint_resume_after_interruption(tmp_path):
    log_dir, checkpoints = tmp_path / "log", tmp_path / "ckpt"
    log_dir.mkdir()
    working = functools.partial(logged_square, log_dir=str(log_dir))
    (tmp_path / "fail-3").touch()
    with pytest.raises(RuntimeError, match="unit 3 failed"):
        parallel_map(working, range(6), checkpoint_dir=checkpoints)
    (tmp_path / "fail-3").unlink()
    saved = sorted(json.loads(p.read_text())["item"] for p in checkpoints.glob("*.json"))
    assert saved == [0, 1, 2]
    assert not list(checkpoints.glob("*.tmp"))

    for p in log_dir.iterdir():
        p.unlink()
    result = parallel_map(working, range(6), checkpoint_dir=checkpoints, n_jobs=2)
    assert result == [0, 1, 4, 9, 16, 25]
    assert sorted(int(p.name.split("-")[0]) for p in log_dir.iterdir()) == [3, 4, 5]

    for p in log_dir.iterdir():
        p.unlink()
    shuffled = [5, 0, 2]
    assert parallel_map(working, shuffled, checkpoint_dir=checkpoints) == [25, 0, 4]
    assert not list(log_dir.iterdir())


def test_units_finished_after_a_slow_failing_unit_are_kept(tmp_path):
    work = functools.partial(fail_after_others, checkpoints=str(tmp_path))
    with pytest.raises(WorkerError, match=r"^unit 0 \(item 0\) on worker .* failed: RuntimeError: unit 0 failed last$"):
        parallel_map(work, range(4), n_jobs=2, checkpoint_dir=tmp_path)
    saved = sorted(json.loads(p.read_text())["item"] for p in tmp_path.glob("*.json"))
    assert saved == [1, 2, 3]


def test_checkpointed_results_are_json_values(tmp_path):
    def as_array(item: int) -> np.ndarray:
        return np.arange(item, dtype=np.float32)

    first = parallel_map(as_array, [2, 3], checkpoint_dir=tmp_path)
    again = parallel_map(as_array, [2, 3], checkpoint_dir=tmp_path)
    assert first == again == [[0.0, 1.0], [0.0, 1.0, 2.0]]


def test_progress_bar_on_stderr(capsys, tmp_path):
    parallel_map(abs, [-1, -2, -3], progress=True, desc="units")
    err = capsys.readouterr().err
    assert "units" in err and "3/3" in err
    parallel_map(abs, [-1, -2], checkpoint_dir=tmp_path)
    parallel_map(abs, [-1, -2, -3], progress=True, desc="resumed", checkpoint_dir=tmp_path)
    assert "3/3" in capsys.readouterr().err
    parallel_map(abs, [-1], progress=False)
    assert capsys.readouterr().err == ""


def test_bad_n_jobs():
    cores = joblib.cpu_count()
    with pytest.raises(InputError, match=r"`n_jobs` must be a positive number of workers, or -1 \(all cores\)"):
        parallel_map(abs, [1], n_jobs=0)
    with pytest.raises(InputError, match=f"on this machine's {cores} cores; got {-cores - 1}."):
        parallel_map(abs, [1], n_jobs=-cores - 1)
    with pytest.raises(InputError, match="`--n-jobs` must be an integer; got"):
        check_n_jobs(1.5, "--n-jobs")
    assert check_n_jobs(-cores) == -cores and check_n_jobs(None) is None and check_n_jobs(3) == 3
    with pytest.raises(InputError, match="`n_jobs` must be an integer; got 'two'"):
        parallel_map(abs, [1], n_jobs="two")


def test_an_edit_to_the_functions_module_is_not_served_from_the_checkpoint(tmp_path, monkeypatch):
    """The key holds the source of the module behind the function (through partial), not only its own code."""
    import inspect

    log = tmp_path / "log"
    log.mkdir()
    square = functools.partial(logged_square, log_dir=str(log))
    assert parallel_map(square, [1, 2], checkpoint_dir=tmp_path / "ckpt") == [1, 4]
    assert parallel_map(square, [1, 2], checkpoint_dir=tmp_path / "ckpt") == [1, 4]
    assert len(list(log.iterdir())) == 2  # reused
    original = inspect.getsource
    monkeypatch.setattr(inspect, "getsource", lambda obj: original(obj) + ("\n# edited" if obj.__name__ == __name__ else ""))
    assert parallel_map(square, [1, 2], checkpoint_dir=tmp_path / "ckpt") == [1, 4]
    assert len(list(log.iterdir())) == 4  # the helper module changed: computed again


def _half_or_fail(x: int) -> dict:
    return {"value": x / 2, "error": None} if x % 3 else {"value": None, "error": "divisible by 3"}


def test_hooks_keys_keep_skip_and_on_result(tmp_path):
    """The hooks the PGDL harness builds on: caller keys, failures not stored, a budget that skips, results as they come."""
    from fitaudit.checkpoint import CheckpointStore

    items = list(range(1, 10))
    keys = [CheckpointStore.key("unit", i) for i in items]
    seen: list[int] = []
    spent = {"total": 0.0}

    def on_result(i, out):
        seen.append(i)
        spent["total"] += out["value"] or 0.0

    out = parallel_map(_half_or_fail, items, checkpoint_dir=tmp_path, keys=keys, keep=lambda o: o["error"] is None,
                       skip=lambda i: spent["total"] > 5.0, on_result=on_result)
    # 0.5 + 1 + (fail) + 2 + 2.5 = 6 > 5 after item 5: items 6.. are skipped, their results None
    assert [o["value"] if o else None for o in out] == [0.5, 1.0, None, 2.0, 2.5, None, None, None, None]
    assert out[2]["error"] == "divisible by 3" and out[5] is None
    assert seen == [0, 1, 2, 3, 4]
    store = CheckpointStore(tmp_path)
    assert [store.has(k) for k in keys] == [True, True, False, True, True, False, False, False, False]
    seen.clear()
    spent["total"] = 0.0
    again = parallel_map(_half_or_fail, items, checkpoint_dir=tmp_path, keys=keys, on_result=on_result)
    assert seen[:4] == [0, 1, 3, 4]  # the stored results first, in item order; then the rest as computed
    assert sorted(seen) == list(range(9)) and again[7]["value"] == 4.0 and again[8]["error"] == "divisible by 3"
    with pytest.raises(InputError, match="`keys` must come with `checkpoint_dir`, one per item"):
        parallel_map(abs, [1, 2], keys=["a", "b"])


def backend_in_unit(ask: bool) -> str | None:
    """The default inference backend a unit sees (taken only when ``ask``), without any torch model."""
    from fitaudit.models.inference.settings import default_backend, requested_backend

    return default_backend() if ask else requested_backend()


@pytest.mark.parametrize("n_jobs", [1, 2])
@pytest.mark.slow
def test_units_run_under_the_callers_backend_and_report_taking_it(n_jobs):
    """A worker process does not inherit ``--backend`` (set in the parent's memory): parallel_map hands it over."""
    from fitaudit.models.inference import using_backend
    from fitaudit.models.inference.settings import default_backend_applied

    with using_backend("torch"):
        assert parallel_map(backend_in_unit, [False] * 3, n_jobs=n_jobs) == ["torch"] * 3
        assert not default_backend_applied()  # looked at, not taken: no model took it
        assert parallel_map(backend_in_unit, [False, True, False], n_jobs=n_jobs) == ["torch"] * 3
        assert default_backend_applied()  # a unit (in a worker, with n_jobs 2) took it
    with using_backend("onnx"):
        assert not default_backend_applied()  # each block starts afresh


def adaptive_backend_in_unit(_: int) -> tuple[str | None, str]:
    """The backend named in a unit, and the one the examiner would run there."""
    from fitaudit.models.inference.settings import adaptive_backend, requested_backend

    return requested_backend(), adaptive_backend()


@pytest.mark.parametrize("n_jobs", [1, 2])
@pytest.mark.slow
def test_units_see_no_backend_named_where_the_caller_named_none(n_jobs, monkeypatch):
    """A unit must not see the process default ('auto') as named: the examiner there runs eager, as outside."""
    from fitaudit.models.inference import settings

    monkeypatch.setattr(settings, "_state", {"backend": "auto", "applied": False, "named": False})
    assert parallel_map(adaptive_backend_in_unit, [0, 1], n_jobs=n_jobs) == [(None, settings.ADAPTIVE_BACKEND)] * 2
    assert settings._state["named"] is False


def torch_threads(_: int) -> int:
    import torch

    return torch.get_num_threads()


@pytest.mark.slow
def test_units_in_other_processes_run_torch_with_the_callers_threads():
    """torch's reductions round differently across thread counts (an examiner then finds other numbers): a unit in a
    worker process runs the caller's count, not the one the worker was given (joblib gives loky workers 1 here)."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        assert parallel_map(torch_threads, range(2), n_jobs=2) == [3, 3]
    finally:
        torch.set_num_threads(before)
