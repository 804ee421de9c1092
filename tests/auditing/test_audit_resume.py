"""An audit killed mid-way resumes: finished parts are reused, changed inputs recomputed (a real SIGKILL)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

#: runs one audit in its own process; PMV's learner sleeps in fit, so the audit is slow after the overfit parts
SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    import fitaudit
    from fitaudit.report import save_audit
    from fitaudit.data import GaussianMargin
    from fitaudit.overfit import LinearGradientAEG, train_logistic_models

    class SlowLogistic(LogisticRegression):
        def fit(self, X, y, sample_weight=None):
            time.sleep(float(sys.argv[3]))
            return super().fit(X, y, sample_weight)

    dist = GaussianMargin(d=20)
    with np.load(sys.argv[2]) as f:
        test = (f["x"], f["y"])
    train = dist.sample(300, random_state=5)
    model = train_logistic_models(*train, steps=300, random_state=0)[0]
    result = fitaudit.audit(model, test, train_data=train, learner=SlowLogistic(), aeg=LinearGradientAEG(5.0, dist),
                            checkpoint_dir=sys.argv[1], progress=False)
    save_audit(result, sys.argv[1])
    print(json.dumps({p.id: p.resumed for p in result.parts}))
    """
)


def _run(tmp: Path, out: Path, data: Path, sleep: float) -> subprocess.Popen[str]:
    script = tmp / "run_audit.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, str(script), str(out), str(data), str(sleep)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


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
    process = _run(tmp_path, out, data, sleep=0.6)
    parts = out / "parts"
    deadline = time.time() + 240
    # the first questions (accuracy, leakage; agreement is skipped) and both overfit parts finished
    while time.time() < deadline and len(list(parts.glob("*.json"))) < 4:
        assert process.poll() is None, process.communicate()[1]
        time.sleep(0.05)
    time.sleep(0.5)  # PMV is now fitting its sleeping learner
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL
    # nothing half-written left as if complete: no report, no temporary file read back
    assert not (out / "audit.json").exists() and not (out / "report.html").exists()
    assert len(list(parts.glob("*.json"))) == 4

    resumed = _finish(_run(tmp_path, out, data, sleep=0.0))
    assert resumed == {"accuracy": True, "leakage": True, "agreement": False,
                       "overfit-test": True, "overfit-train": True, "examine": False, "pgdl": False, "pmv": False}
    first = json.loads((out / "audit.json").read_text())

    # an uninterrupted run in a fresh folder gives the same numbers
    fresh = _finish(_run(tmp_path, tmp_path / "fresh", data, sleep=0.0))
    assert not any(fresh.values())
    clean = json.loads((tmp_path / "fresh" / "audit.json").read_text())
    for a, b in zip(first["parts"], clean["parts"]):
        assert a["id"] == b["id"] and a["numbers"] == b["numbers"]

    # changed scored data: only the parts that read it are recomputed
    other = _test_data(tmp_path / "other.npz", 2)
    changed = _finish(_run(tmp_path, out, other, sleep=0.0))
    assert changed == {"accuracy": False, "leakage": False, "agreement": False,
                       "overfit-test": False, "overfit-train": True, "examine": False, "pgdl": False, "pmv": True}
