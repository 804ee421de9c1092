"""An audit killed mid-way resumes: finished parts are reused, changed inputs recomputed (a real SIGKILL)."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

#: every test here takes seconds (README.md: the fast command leaves them out)
pytestmark = pytest.mark.slow

#: runs one audit in its own process. With a file descriptor (argv[3] >= 0), PMV's learner writes a line to it
#: when its fit begins, then waits to be killed: the test kills the audit inside PMV, never by guesswork
SCRIPT = textwrap.dedent(
    """
    import json, os, sys, time
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    import fitaudit
    from fitaudit.report import save_audit
    from fitaudit.data import GaussianMargin
    from fitaudit.overfit import LinearGradientAEG, train_logistic_models

    class SlowLogistic(LogisticRegression):
        def fit(self, X, y, sample_weight=None):
            if int(sys.argv[3]) >= 0:
                os.write(int(sys.argv[3]), b"fitting\\n")
                time.sleep(600)
            return super().fit(X, y, sample_weight)

    dist = GaussianMargin(d=20)
    with np.load(sys.argv[2]) as f:
        test = (f["x"], f["y"])
    train = dist.sample(300, random_state=5)
    model = train_logistic_models(*train, steps=300, random_state=0)[0]
    result = fitaudit.audit(model, test, train_data=train, learner=SlowLogistic(), aeg=LinearGradientAEG(5.0, dist),
                            checkpoint_dir=sys.argv[1], options=fitaudit.RunOptions(progress=False))
    save_audit(result, sys.argv[1])
    print(json.dumps({p.id: p.resumed for p in result.parts}))
    """
)


def _run(tmp: Path, out: Path, data: Path, signal_fd: int = -1) -> subprocess.Popen[str]:
    script = tmp / "run_audit.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, str(script), str(out), str(data), str(signal_fd)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            pass_fds=() if signal_fd < 0 else (signal_fd,))


def _wait_for_line(process: subprocess.Popen[str], read_end: int, timeout: float) -> bytes:
    """The child's first line on the pipe; b"" if it closed the pipe (died) or wrote nothing in ``timeout`` s."""
    ready, _, _ = select.select([read_end], [], [], timeout)
    return os.read(read_end, 64) if ready else b""


def _test_data(path: Path, seed: int) -> Path:
    from fitaudit.data import GaussianMargin

    x, y = GaussianMargin(d=20).sample(300, random_state=seed)
    np.savez(path, x=x, y=y)
    return path


def _finish(process: subprocess.Popen[str]) -> dict[str, bool]:
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    return json.loads(stdout.strip().splitlines()[-1])


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_killed_audit_resumes_and_recomputes_only_what_changed(tmp_path):
    out = tmp_path / "out"
    data = _test_data(tmp_path / "test.npz", 1)
    parts = out / "parts"
    read_end, write_end = os.pipe()
    try:
        process = _run(tmp_path, out, data, signal_fd=write_end)
        os.close(write_end)  # the child holds the only write end: its death is an end of file here
        line = _wait_for_line(process, read_end, timeout=240)
    finally:
        os.close(read_end)
    if line != b"fitting\n":
        process.kill()
        pytest.fail(f"PMV's learner never began to fit ({line!r}): {process.communicate()[1][-2000:]}")
    # PMV is fitting: the first questions (accuracy, baseline, calibration, slices, labels, leakage; agreement is
    # skipped) and both
    # overfit parts finished
    assert process.poll() is None
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL
    # nothing half-written left as if complete: no report, no temporary file read back
    assert not (out / "audit.json").exists() and not (out / "report.html").exists()
    assert len(list(parts.glob("*.json"))) == 8

    resumed = _finish(_run(tmp_path, out, data))
    assert resumed == {"accuracy": True, "baseline": True, "calibration": True, "slices": True, "labels": True,
                       "leakage": True, "agreement": False,
                       "overfit-test": True, "overfit-train": True, "examine": False, "pgdl": False, "pmv": False}
    first = json.loads((out / "audit.json").read_text())

    # an uninterrupted run in a fresh folder gives the same numbers
    fresh = _finish(_run(tmp_path, tmp_path / "fresh", data))
    assert not any(fresh.values())
    clean = json.loads((tmp_path / "fresh" / "audit.json").read_text())
    for a, b in zip(first["parts"], clean["parts"]):
        assert a["id"] == b["id"] and a["numbers"] == b["numbers"]

    # changed scored data: only the parts that read it are recomputed
    other = _test_data(tmp_path / "other.npz", 2)
    changed = _finish(_run(tmp_path, out, other))
    assert changed == {"accuracy": False, "baseline": False, "calibration": False, "slices": False, "labels": False,
                       "leakage": False,
                       "agreement": False,
                       "overfit-test": False, "overfit-train": True, "examine": False, "pgdl": False, "pmv": True}
