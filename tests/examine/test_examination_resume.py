"""Examinations resume after a kill with the same numbers, and do not depend on n_jobs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import joblib
import numpy as np
import pytest
from examine_toys import LABELS, SPACE, CountingGenerator, HillClimber, classify, render

from fitaudit._errors import FitauditError
from fitaudit.examine import examine

HERE = Path(__file__).parent


def hill(generator, **kwargs):
    options = {"examiner": HillClimber(step=0.2), "steps": 23, "random_state": 4, "chunk_size": 2,
               "checkpoint_every": 5, "n_reference": 4}
    options.update(kwargs)
    return examine(classify, generator, **options)


def assert_same(a, b):
    for name in ("loss", "a", "b", "c", "predicted", "instance", "step"):
        np.testing.assert_array_equal(a.queries[name], b.queries[name])
    np.testing.assert_array_equal(a.reference_queries["loss"], b.reference_queries["loss"])
    np.testing.assert_array_equal(a.final_loss, b.final_loss)
    assert a.weakness.rules == b.weakness.rules


def test_resume_after_an_injected_failure_gives_the_uninterrupted_result(tmp_path):
    uninterrupted = hill(CountingGenerator())
    # the 14th generate call fails: after the label probe, chunk 0's reference sample and 11 steps
    with pytest.raises(RuntimeError, match="injected failure"):
        hill(CountingGenerator(fail_after=13), checkpoint_dir=tmp_path)
    assert len(list(tmp_path.glob("*.npz"))) >= 3  # reference + the segments written so far
    resumed_generator = CountingGenerator()
    resumed = hill(resumed_generator, checkpoint_dir=tmp_path)
    assert_same(resumed, uninterrupted)
    # the logged steps were replayed without rendering: 1 probe + chunk 0's 12 remaining steps
    # (its reference sample and 11 steps were kept) + chunk 1's reference and 23 steps
    assert resumed_generator.calls == 1 + 12 + 1 + 23
    again = CountingGenerator()
    assert_same(hill(again, checkpoint_dir=tmp_path), uninterrupted)
    assert again.calls == 1  # everything from the checkpoint: only the label probe


class CountingHillClimber(HillClimber):
    """A hill climber that counts its proposals, over all its instances (one is built per chunk)."""

    name = "counting-hill"
    asks = 0

    def _ask(self):
        type(self).asks += 1
        return super()._ask()


def test_a_finished_examination_is_read_back_without_asking_the_examiner(tmp_path, monkeypatch):
    monkeypatch.setattr(CountingHillClimber, "asks", 0)
    first = hill(CountingGenerator(), examiner=CountingHillClimber(step=0.2), checkpoint_dir=tmp_path)
    assert CountingHillClimber.asks > 0
    CountingHillClimber.asks = 0
    again = hill(CountingGenerator(), examiner=CountingHillClimber(step=0.2), checkpoint_dir=tmp_path)
    assert_same(again, first)
    assert CountingHillClimber.asks == 0  # a complete log is not replayed (the package's BO takes hours to replay)


def test_a_longer_run_extends_a_shorter_one(tmp_path):
    hill(CountingGenerator(), checkpoint_dir=tmp_path, steps=10)
    generator = CountingGenerator()
    longer = hill(generator, checkpoint_dir=tmp_path, steps=23)
    assert_same(longer, hill(CountingGenerator()))
    assert generator.calls == 1 + 2 * 13


def test_changed_settings_do_not_reuse_the_log(tmp_path):
    hill(CountingGenerator(), checkpoint_dir=tmp_path)
    generator = CountingGenerator()
    other = hill(generator, checkpoint_dir=tmp_path, loss="margin")
    assert generator.calls == 1 + 2 * (1 + 23)
    assert other.loss == "margin"


def test_tampered_log_is_refused(tmp_path):
    hill(CountingGenerator(), checkpoint_dir=tmp_path, random_state=9, steps=5)
    segment = next(p for p in tmp_path.glob("*-000000.npz"))
    with np.load(segment) as data:
        arrays = {k: data[k] for k in data.files}
    arrays["factors"][0] = 0.123
    np.savez(segment, **arrays)
    with pytest.raises(FitauditError, match="does not match"):
        hill(CountingGenerator(), checkpoint_dir=tmp_path, random_state=9, steps=8)


SCRIPT = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {here!r})
    from examine_toys import CountingGenerator, HillClimber, classify
    from fitaudit.examine import examine

    class Slow(CountingGenerator):
        def generate(self, instances, factors):
            time.sleep(0.05)
            return super().generate(instances, factors)

    examine(classify, Slow(), examiner=HillClimber(step=0.2), steps=200, random_state=4, chunk_size=None,
            checkpoint_every=5, n_reference=4, checkpoint_dir={folder!r})
    """
)


@pytest.mark.slow
def test_resume_after_a_real_kill(tmp_path):
    folder = tmp_path / "ckpt"
    script = tmp_path / "run.py"
    script.write_text(SCRIPT.format(here=str(HERE), folder=str(folder)))
    process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(list(folder.glob("*-0000[1-9]*.npz"))) < 1:
            time.sleep(0.1)
        assert process.poll() is None, "the examination finished before it could be killed"
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    finally:
        if process.poll() is None:
            process.kill()
    kept = sorted(folder.glob("*-0*.npz"))
    assert kept
    generator = CountingGenerator()
    resumed = examine(classify, generator, examiner=HillClimber(step=0.2), steps=200, random_state=4,
                      chunk_size=None, checkpoint_every=5, n_reference=4, checkpoint_dir=folder)
    uninterrupted = examine(classify, CountingGenerator(), examiner=HillClimber(step=0.2), steps=200,
                            random_state=4, chunk_size=None, checkpoint_every=5, n_reference=4)
    assert_same(resumed, uninterrupted)
    assert generator.calls < 1 + 200  # the killed run's steps were not rendered again


@pytest.mark.slow
def test_same_numbers_whatever_n_jobs():
    sequential = examine(classify, render, factor_space=SPACE, labels=LABELS, examiner="random", steps=8,
                         random_state=2, chunk_size=1)
    parallel = examine(classify, render, factor_space=SPACE, labels=LABELS, examiner="random", steps=8,
                       random_state=2, chunk_size=1, n_jobs=2)
    assert_same(parallel, sequential)


def test_dask_cluster_gives_the_same_numbers():
    distributed = pytest.importorskip("distributed")
    local = hill(CountingGenerator(), steps=8)
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
        distributed.Client(cluster),
        joblib.parallel_config(backend="dask"),
    ):
        on_dask = hill(CountingGenerator(), steps=8, n_jobs=-1)
    assert_same(on_dask, local)


def test_a_change_to_the_examiners_code_is_not_served_from_the_checkpoint(tmp_path, monkeypatch):
    """The key holds all of fitaudit's source (an edit to BO's GP module counts), not only the examiner's settings."""
    import fitaudit.checkpoint as checkpoint
    import fitaudit.examine.examination as examination
    from fitaudit.examine.bo import BOExaminer

    before = examination._code_fingerprint(BOExaminer)
    monkeypatch.setattr(checkpoint, "package_fingerprint", lambda: "fitaudit with fitaudit.examine._gp edited")
    assert examination._code_fingerprint(BOExaminer) != before
    monkeypatch.undo()

    generator = CountingGenerator()
    first = hill(generator, checkpoint_dir=tmp_path)
    calls = generator.calls
    hill(generator, checkpoint_dir=tmp_path)
    assert generator.calls == calls + 1  # unchanged code: everything reused (1 call: examine's probe of the generator)
    monkeypatch.setattr(examination, "_code_fingerprint", lambda cls: "another version")
    again = hill(generator, checkpoint_dir=tmp_path)
    assert generator.calls > calls + 10  # changed code: recomputed
    assert_same(first, again)
