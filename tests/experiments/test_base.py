"""The reproductions' shared base (fitaudit.experiments.base)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from fitaudit import InputError
from fitaudit.experiments.base import Run

CALLS: list[int] = []


def _unit(X, y, *, scale, n_jobs, progress, checkpoint_dir):
    CALLS.append(scale)
    return {"total": scale * float(np.sum(X) + np.sum(y)), "fits": None if checkpoint_dir is None else str(checkpoint_dir)}


def test_mode_is_checked_against_the_table_and_gives_its_settings(tmp_path) -> None:
    run = Run({"quick": {"n": 2}, "full": {"n": 100}}, mode="quick", checkpoint_dir=tmp_path, random_state=7)
    assert (run.mode, run.settings, run.random_state, run.progress, run.n_jobs) == ("quick", {"n": 2}, 7, True, None)
    assert run.folder("examinations") == tmp_path / "examinations"
    assert Run(("quick", "full")).settings is None and Run(("quick", "full")).mode == "full"
    assert Run(("quick", "full")).folder("x") is None
    with pytest.raises(InputError, match="mode"):
        Run(("quick", "full"), mode="medium")
    assert run.seconds() >= 0


def test_a_reproduction_without_parallel_units_refuses_n_jobs() -> None:
    from fitaudit.experiments.overfit.shapes import reproduce_overfit_shapes

    assert Run(("full",), n_jobs=2).n_jobs == 2
    with pytest.raises(InputError, match="^`n_jobs`: this reproduction runs its units one after another"):
        Run(("full",), n_jobs=2, parallel=False)
    with pytest.raises(InputError, match="^`n_jobs`"):
        reproduce_overfit_shapes(mode="quick", n_jobs=2)


def test_units_are_computed_once_and_keyed_by_settings_and_data(tmp_path) -> None:
    X, y = np.arange(6.0).reshape(3, 2), np.array([0, 1, 1])
    CALLS.clear()
    first = Run(("quick",), mode="quick", checkpoint_dir=tmp_path, progress=False).unit(_unit, X, y, scale=2)
    again = Run(("quick",), mode="quick", checkpoint_dir=tmp_path, n_jobs=2).unit(_unit, X, y, scale=2)
    assert first == again and first["total"] == 2 * 17.0 and CALLS == [2]
    assert first["fits"].startswith(str(tmp_path))
    other = Run(("quick",), mode="quick", checkpoint_dir=tmp_path).unit(_unit, X + 1, y, scale=2)
    assert other["total"] == 2 * 23.0 and CALLS == [2, 2]
    Run(("quick",), mode="quick", checkpoint_dir=tmp_path).unit(_unit, X, y, scale=3)
    assert CALLS == [2, 2, 3]
    plain = Run(("quick",), mode="quick").unit(_unit, X, y, scale=2)
    assert plain["fits"] is None and CALLS == [2, 2, 3, 2]


@pytest.mark.slow
def test_the_instruments_do_not_import_the_experiments() -> None:
    import subprocess

    code = (
        "import sys, fitaudit.overfit, fitaudit.examine, fitaudit.pmv, fitaudit.leakage, fitaudit.pgdl;"
        "print(sorted(k for k in sys.modules if k.startswith('fitaudit.experiments')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_reproduction_without_torch_models_refuses_a_device_other_than_the_cpu() -> None:
    from fitaudit.experiments.pmv import reproduce_pmv_comparison

    assert Run(("full",)).device == Run(("full",), device="cpu").device == "cpu"
    with pytest.raises(InputError, match="^`device`: this reproduction runs no torch model, only CPU code; leave "):
        Run(("full",), device="cuda")
    with pytest.raises(InputError, match="^`device`: this reproduction runs no torch model"):
        reproduce_pmv_comparison(mode="quick", device="cuda:0")
    pytest.importorskip("torch")
    assert Run(("full",), runs_torch=True, device="cpu").device == "cpu"
    with pytest.raises(InputError, match="^`device` must name a torch device such as 'cpu' or 'cuda:0'; got 'tpu'"):
        Run(("full",), runs_torch=True, device="tpu")


@pytest.mark.parametrize("name", ["overfit-shapes", "overfit-imagefolder", "examiner-table", "examiner-images"])
@pytest.mark.slow
def test_the_torch_reproductions_train_on_the_device(name, monkeypatch, tmp_path) -> None:
    """The device reaches the training (torch's ``meta`` device stands for a GPU; the spy stops the run there)."""
    pytest.importorskip("torch")
    from fitaudit.experiments.catalogue import FUNCTIONS
    from fitaudit.models import training

    class Trained(Exception):
        pass

    def spy(*args, device="cpu", **kwargs):
        raise Trained(device)

    monkeypatch.setattr(training, "train_classifier", spy)
    with pytest.raises(Trained, match="^meta$"):
        FUNCTIONS[name](mode="quick", checkpoint_dir=tmp_path, progress=False, device="meta")
