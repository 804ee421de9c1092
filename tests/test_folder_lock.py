"""One writer per output folder (:mod:`fitaudit.folder_lock`): a live holder refuses, a killed one is taken over."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from fitaudit._errors import InputError
from fitaudit.folder_lock import LOCK_NAME, writer_lock

#: a child that takes the lock, says so, then waits for its stdin to close (or is killed)
HOLDER = textwrap.dedent("""
    import sys
    from fitaudit.folder_lock import writer_lock
    with writer_lock(sys.argv[1], command="fitaudit audit"):
        print("held", flush=True)
        sys.stdin.read()
""")


@pytest.fixture
def holder(tmp_path):
    """A live process holding ``tmp_path / 'out'`` (stdin open until the test ends)."""
    folder = tmp_path / "out"
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "held"
    yield folder, child
    if child.poll() is None:
        child.stdin.close()
        child.wait(timeout=30)


def test_a_second_writer_is_refused_naming_the_holder(holder):
    folder, child = holder
    with pytest.raises(InputError) as caught, writer_lock(folder):
        pass
    message = str(caught.value)
    assert f"pid {child.pid}" in message and "`fitaudit audit`" in message and "another `--out`" in message
    assert (folder / LOCK_NAME).exists()  # the holder's file is left alone


def test_a_killed_holder_is_recognised_and_taken_over(holder):
    folder, child = holder
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    assert (folder / LOCK_NAME).exists()  # kill -9 left the file behind
    with writer_lock(folder) as lock:
        assert lock.taken_over is not None and lock.taken_over["pid"] == child.pid
    assert not (folder / LOCK_NAME).exists()  # a clean exit removes it


def test_a_released_lock_leaves_nothing_and_is_free_again(tmp_path):
    with writer_lock(tmp_path) as lock:
        assert lock.taken_over is None and (tmp_path / LOCK_NAME).exists()
    assert not (tmp_path / LOCK_NAME).exists()
    with writer_lock(tmp_path) as again:
        assert again.taken_over is None


def test_the_lock_is_re_entrant_within_one_process(tmp_path):
    with writer_lock(tmp_path):
        with writer_lock(tmp_path / "sub" / "..") as inner:  # the same folder, named otherwise
            assert inner.path == (tmp_path / LOCK_NAME).resolve()
        assert (tmp_path / LOCK_NAME).exists()  # the inner exit leaves the outer lock held
    assert not (tmp_path / LOCK_NAME).exists()


def test_the_command_line_refuses_a_held_out_folder_before_any_work(holder, capsys):
    from fitaudit.cli import main

    folder, child = holder
    (folder / "audit.json").write_text("earlier report\n")
    code = main(["audit", "--model", str(folder / "missing.skops"), "--data", str(folder / "missing.npz"),
                 "--out", str(folder), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "`--out`" in err and "is being written by another fitaudit run" in err and f"pid {child.pid}" in err
    assert (folder / "audit.json").read_text() == "earlier report\n"
