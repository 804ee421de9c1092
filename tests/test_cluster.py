"""Every model format on a Dask cluster of worker processes: the same numbers as locally, failures in one line.

The cluster (a scheduler and two single-thread worker processes) runs in a
child process (tests/cluster_checks.py) that is killed with its workers if
it does not finish in time: a hang fails the test instead of stalling the suite.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fitaudit import InputError

torch = pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")
pytest.importorskip("PIL.Image")

#: every test here takes seconds (README.md: the fast command leaves them out)
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """A torch folder, its ONNX export and image folders (:func:`cluster_checks.make_files`)."""
    from cluster_checks import make_files

    return make_files(tmp_path_factory.mktemp("cluster"))


def test_an_onnx_adapter_travels_as_its_file_and_opens_one_session_per_process(files, tmp_path):
    from fitaudit.models import load_model
    from fitaudit.models.onnx_adapter import _SESSIONS

    model = load_model(files / "model.onnx")
    x = np.random.default_rng(1).random((3, 3, 12, 12), dtype=np.float32)
    sent = pickle.dumps(model)
    assert len(sent) < 2000  # the path, the digest and the settings; no session, no weights
    first, second = pickle.loads(sent), pickle.loads(sent)
    assert first.model is second.model and first.model is not model.model  # opened once here, then reused
    assert np.array_equal(first.logits(x), model.logits(x))
    copy = tmp_path / "copy.onnx"
    copy.write_bytes((files / "model.onnx").read_bytes())
    moved = pickle.dumps(load_model(copy))
    _SESSIONS.clear()
    copy.unlink()
    with pytest.raises(InputError, match=r"the ONNX file '.*copy.onnx' does not exist on this worker \(host .*"
                                         r"every worker must see the model file at the same path"):
        pickle.loads(moved)
    copy.write_bytes(b"not the model")
    with pytest.raises(InputError, match="is not the file the run started with"):
        pickle.loads(moved)
    from fitaudit.models.onnx_adapter import OnnxClassifier

    from_bytes = pickle.loads(pickle.dumps(OnnxClassifier((files / "model.onnx").read_bytes())))
    assert np.array_equal(from_bytes.logits(x), model.logits(x))


def test_a_unit_failing_in_another_process_is_one_line_naming_it():
    from fitaudit._errors import WorkerError
    from fitaudit.parallel import parallel_map

    with pytest.raises(WorkerError, match=r"^unit 2 of 'twos' \(item 2\) on worker \S+:\d+ failed: "
                                          r"ZeroDivisionError: division by zero$"):
        parallel_map(_inverse_or_fail, range(4), n_jobs=2, desc="twos")
    with pytest.raises(ZeroDivisionError):  # in this process the error is the unit's own
        parallel_map(_inverse_or_fail, range(4))


def _inverse_or_fail(item: int) -> float:
    return 1 / (item - 2)


def test_dask_worker_processes_give_the_local_numbers_and_fail_in_one_line(files):
    """The ONNX audit completes on the cluster with the local numbers (it hung on a pickling error), the torch
    examiner's numbers equal the local ones, a failed unit and unsendable work end the run in one line."""
    pytest.importorskip("distributed")
    script = Path(__file__).with_name("cluster_checks.py")
    process = subprocess.Popen([sys.executable, str(script), str(files)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True,
                               env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")})
    try:
        stdout, stderr = process.communicate(timeout=420)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # the child and its worker processes
        process.communicate()
        pytest.fail("the cluster checks did not finish in 420 s (a hang)")
    assert process.returncode == 0, stderr[-3000:]
    out = json.loads(stdout.strip().splitlines()[-1])
    assert out["onnx_logits_equal"] is True
    assert out["failed_unit"].startswith("WorkerError: unit 2 of 'twos' (item 2) on worker ")
    assert out["failed_unit"].endswith("failed: RuntimeError: no twos here")
    assert out["unsendable"].startswith("WorkerError: the units of 'locked' cannot be sent to other processes or a "
                                        "cluster: TypeError: cannot pickle '_thread.lock' object")
    for model, (local, remote) in out["examine"].items():
        assert remote == local, model
        assert local["instances"] >= 1 and local["model queries"] > 0
