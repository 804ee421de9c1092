"""audit.json and report.html are one unit (issue 30, item 3): the page names the JSON it was drawn from,
a page left beside another run's JSON is drawn again, a failed write replaces neither, and a killed
run's temporary files are removed."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from sklearn.datasets import make_moons
from sklearn.linear_model import LogisticRegression

import fitaudit
from fitaudit.cli import main
from fitaudit.options import RunOptions
from fitaudit.report import save_audit
from fitaudit.report.audit import page_digest
from fitaudit.report.saved import repair_page


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def moons():
    x, y = make_moons(240, noise=0.3, random_state=0)
    return LogisticRegression().fit(x[:160], y[:160]), (x[160:], y[160:])


def _run(moons, seed, title):
    model, test = moons
    return fitaudit.audit(model, test, options=RunOptions(random_state=seed, progress=False), title=title)


def _audit(moons, out, seed, title):
    """An audit saved into ``out`` (audit.json and report.html)."""
    result = _run(moons, seed, title)
    save_audit(result, out)
    return result


def test_the_page_names_the_digest_of_its_json(moons, tmp_path):
    _audit(moons, tmp_path, 0, "run A")
    assert page_digest(tmp_path / "report.html") == _digest(tmp_path / "audit.json")
    assert not repair_page(tmp_path)  # they match: nothing to do
    assert main(["report", str(tmp_path / "audit.json")]) == 0  # a rebuilt page names the JSON too
    assert page_digest(tmp_path / "report.html") == _digest(tmp_path / "audit.json")


def test_a_page_beside_another_runs_json_is_drawn_again(moons, tmp_path):
    """A kill between the two renames left a JSON of one run beside a page of another."""
    _audit(moons, tmp_path / "a", 0, "run A")
    _audit(moons, tmp_path / "b", 1, "run B")
    (tmp_path / "a" / "report.html").replace(tmp_path / "b" / "report.html")  # B's JSON, A's page
    assert "run A" in (tmp_path / "b" / "report.html").read_text()
    assert repair_page(tmp_path / "b")
    page = (tmp_path / "b" / "report.html").read_text()
    assert "run B" in page and "run A" not in page
    assert page_digest(tmp_path / "b" / "report.html") == _digest(tmp_path / "b" / "audit.json")


def test_every_audit_command_repairs_the_folder_before_its_work(moons, tmp_path, capsys):
    import numpy as np
    import skops.io

    _audit(moons, tmp_path / "a", 0, "run A")
    _audit(moons, tmp_path / "b", 1, "run B")
    (tmp_path / "a" / "report.html").replace(tmp_path / "b" / "report.html")
    model, test = moons
    skops.io.dump(model, tmp_path / "model.skops")
    np.savez(tmp_path / "test.npz", x=test[0], y=test[1])
    argv = ["audit", "--model", str(tmp_path / "model.skops"), "--data", str(tmp_path / "test.npz"),
            "--out", str(tmp_path / "b"), "--delta", "7", "--quiet"]
    assert main(argv) == 2 and "`--delta`" in capsys.readouterr().err  # refused, yet the page was put right first
    assert "run B" in (tmp_path / "b" / "report.html").read_text()


def test_a_json_that_is_no_audit_leaves_no_page_beside_it(moons, tmp_path):
    _audit(moons, tmp_path, 0, "run A")
    (tmp_path / "audit.json").write_text("{}")
    assert repair_page(tmp_path) and not (tmp_path / "report.html").exists()


def test_a_full_disk_while_writing_replaces_neither_file(moons, tmp_path, monkeypatch):
    _audit(moons, tmp_path, 0, "run A")
    before = {name: (tmp_path / name).read_bytes() for name in ("audit.json", "report.html")}
    calls = []

    def fsync(fd):
        calls.append(fd)
        if len(calls) == 2:  # the page's temporary file: the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")

    result = _run(moons, 1, "run B")
    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError):
        save_audit(result, tmp_path)
    monkeypatch.undo()
    assert {name: (tmp_path / name).read_bytes() for name in before} == before
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


_STALLED_SAVE = """
import contextlib, sys, time
import fitaudit
import fitaudit.checkpoint as checkpoint
import fitaudit.report.audit as audit
from sklearn.datasets import make_moons
from sklearn.linear_model import LogisticRegression

@contextlib.contextmanager
def stalled(path):  # the page's temporary file half written, then the process is killed
    with checkpoint.atomic_path(path) as tmp:
        tmp.write_bytes(b"half")
        print("writing", flush=True)
        time.sleep(60)
        yield tmp

audit.atomic_path = stalled
x, y = make_moons(240, noise=0.3, random_state=0)
model = LogisticRegression().fit(x[:160], y[:160])
result = fitaudit.audit(model, (x[160:], y[160:]), options=fitaudit.RunOptions(progress=False))
from fitaudit.report import save_audit
save_audit(result, sys.argv[1])
"""


@pytest.mark.slow
def test_a_killed_writers_temporary_files_are_removed_by_the_next_run(moons, tmp_path):
    out = tmp_path / "out"
    writer = subprocess.Popen([sys.executable, "-c", _STALLED_SAVE, str(out)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        assert writer.stdout is not None
        deadline = time.time() + 240
        while time.time() < deadline and writer.stdout.readline().strip() != "writing":
            assert writer.poll() is None, writer.communicate()[1]
    finally:
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(timeout=30)
    left = [p.name for p in out.iterdir() if p.name.endswith(".tmp")]
    assert left and all(name.startswith(".report.html.") for name in left)
    assert not (out / "audit.json").exists() and not (out / "report.html").exists()
    _audit(moons, out, 0, "run A")
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
    assert json.loads((out / "audit.json").read_text())["title"] == "run A"
