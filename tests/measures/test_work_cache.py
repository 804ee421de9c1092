"""WorkCache: work shared by the measures of one model record, charged to each reuser, per thread."""

from __future__ import annotations

import threading
import time

from fitaudit.measures.base import ModelRecord, WorkCache, measure_clock


def test_reuse_is_charged_to_the_reusing_thread_only(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])
    cache = WorkCache()
    calls = []

    def work():
        calls.append(1)
        clock[0] += 4.0
        return "done"

    assert cache.get_or_compute("k", work) == "done" and cache.charged() == 0.0  # the computing call pays by wall clock
    assert cache.get_or_compute("k", work) == "done" and cache.charged() == 4.0 and calls == [1]
    seen = []
    thread = threading.Thread(target=lambda: seen.append((cache.get_or_compute("k", work), cache.charged())))
    thread.start()
    thread.join()
    assert seen == [("done", 4.0)] and cache.charged() == 4.0  # another thread's reuse is its own


def test_records_own_separate_caches():
    a = ModelRecord(model=None, train_x=None, train_y=None)
    b = ModelRecord(model=None, train_x=None, train_y=None)
    assert a.cache is not b.cache and a == b  # the cache is not part of a record's value
    with measure_clock(a) as timing:
        a.cache.get_or_compute("k", lambda: 1)
        a.cache.get_or_compute("k", lambda: 1)
    assert timing.seconds >= 0.0
