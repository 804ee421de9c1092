"""The checkpoint store: fingerprints that change with every input, atomic writes, no stale results."""

from __future__ import annotations

import functools
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
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

from fitaudit import InputError
from fitaudit.checkpoint import (
    CheckpointStore,
    atomic_write_bytes,
    check_folder,
    code_fingerprint,
    fingerprint,
)
from fitaudit.parallel import parallel_map


def scaled(item: int, *, k: int) -> int:
    return item * k


def test_a_changed_bound_argument_never_returns_the_old_results(tmp_path):
    """Issue #8: partial(f, k=1) then partial(f, k=100) into one folder returned the first run's numbers."""
    assert parallel_map(functools.partial(scaled, k=1), [1, 2, 3], checkpoint_dir=tmp_path) == [1, 2, 3]
    assert parallel_map(functools.partial(scaled, k=100), [1, 2, 3], checkpoint_dir=tmp_path) == [100, 200, 300]
    assert parallel_map(functools.partial(scaled, k=100), [1, 2, 3], checkpoint_dir=tmp_path, n_jobs=2) == [
        100, 200, 300
    ]
    assert len(list(tmp_path.glob("*.json"))) == 6


def test_numpy_values_are_keyed_by_dtype_shape_and_bytes():
    a = np.arange(6, dtype=np.float64)
    assert fingerprint(a) == fingerprint(a.copy()) == fingerprint(np.arange(6.0))
    assert fingerprint(a) != fingerprint(a.astype(np.float32))
    assert fingerprint(a) != fingerprint(a.reshape(2, 3))
    changed = a.copy()
    changed[5] = np.nextafter(5.0, 6.0)
    assert fingerprint(a) != fingerprint(changed)
    assert fingerprint(a[::2]) == fingerprint(np.ascontiguousarray(a[::2]))
    assert fingerprint(np.float64(1.0)) == fingerprint(1.0) != fingerprint(1)
    assert fingerprint(np.array(["a", "b"], dtype=object)) != fingerprint(np.array(["a", "c"], dtype=object))


def test_containers_functions_and_partials():
    assert fingerprint({"a": 1, "b": [1, 2]}) == fingerprint({"b": [1, 2], "a": 1})
    assert fingerprint({"a": 1}) != fingerprint({"a": 2}) != fingerprint({"b": 1})
    assert fingerprint([1, 2]) != fingerprint((1, 2)) != fingerprint([2, 1])
    assert fingerprint({1, 2}) == fingerprint({2, 1})
    assert fingerprint(functools.partial(scaled, k=1)) == fingerprint(functools.partial(scaled, k=1))
    assert fingerprint(functools.partial(scaled, k=1)) != fingerprint(functools.partial(scaled, k=2))
    assert fingerprint(scaled) != fingerprint(functools.partial(scaled, k=1))

    def closure(k):
        return lambda x: x * k

    assert fingerprint(closure(1)) == fingerprint(closure(1)) != fingerprint(closure(2))
    assert fingerprint(np.random.default_rng(1)) == fingerprint(np.random.default_rng(1))
    rng = np.random.default_rng(1)
    before = fingerprint(rng)
    rng.random()
    assert fingerprint(rng) != before  # a generator that has drawn will draw other numbers


def test_scikit_learn_estimators_by_parameters_and_fitted_state():
    x = np.random.default_rng(0).normal(size=(40, 3))
    y = (x[:, 0] > 0).astype(int)
    assert fingerprint(LogisticRegression(C=1.0)) == fingerprint(LogisticRegression(C=1.0))
    assert fingerprint(LogisticRegression(C=1.0)) != fingerprint(LogisticRegression(C=2.0))
    fitted = LogisticRegression().fit(x, y)
    refit = LogisticRegression().fit(x[:30], y[:30])
    assert fingerprint(fitted) != fingerprint(LogisticRegression()) != fingerprint(refit)
    assert fingerprint(DecisionTreeClassifier(random_state=0).fit(x, y)) == fingerprint(
        DecisionTreeClassifier(random_state=0).fit(x, y)
    )


def test_a_changed_torch_model_or_data_set_gives_a_new_key():
    torch = pytest.importorskip("torch")
    from fitaudit.models import as_classifier

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    x = np.random.default_rng(0).normal(size=(10, 3))
    key = CheckpointStore.key("score", net, x)
    assert key == CheckpointStore.key("score", net, x.copy())
    twin = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    twin.load_state_dict(net.state_dict())
    assert CheckpointStore.key("score", twin, x) == key
    with torch.no_grad():
        twin[2].bias[0] += 1e-6
    assert CheckpointStore.key("score", twin, x) != key
    other = x.copy()
    other[3, 1] += 1e-9
    assert CheckpointStore.key("score", net, other) != key
    assert as_classifier(net).fingerprint() != as_classifier(twin).fingerprint()
    assert CheckpointStore.key("score", as_classifier(net), x) != CheckpointStore.key("score", as_classifier(twin), x)


class Index:
    def __init__(self, labels):
        self.labels = list(labels)

    def to_numpy(self):
        return np.array(self.labels, dtype=object)


class Frame:
    """The part of a pandas DataFrame the fingerprint reads (pandas itself is not a dependency)."""

    def __init__(self, values, columns, index):
        self.values, self.columns, self.index = np.asarray(values), list(columns), Index(index)
        self._mgr = object()  # internals that cannot be fingerprinted must not be looked at

    def to_numpy(self):
        return self.values


def test_tables_by_labels_and_values():
    frame = Frame([[1, 2], [3, 4]], ["a", "b"], [0, 1])
    assert fingerprint(frame) == fingerprint(Frame([[1, 2], [3, 4]], ["a", "b"], [0, 1]))
    assert fingerprint(frame) != fingerprint(Frame([[1, 2], [3, 5]], ["a", "b"], [0, 1]))
    assert fingerprint(frame) != fingerprint(Frame([[1, 2], [3, 4]], ["a", "c"], [0, 1]))
    assert fingerprint(frame) != fingerprint(Frame([[1, 2], [3, 4]], ["a", "b"], [1, 0]))


def test_a_trained_network_changed_by_one_weight_gets_a_new_key(tiny_torch_net, shapes_tiny):
    torch = pytest.importorskip("torch")
    import copy

    key = CheckpointStore.key("audit", tiny_torch_net, shapes_tiny.images, shapes_tiny.labels)
    assert key == CheckpointStore.key("audit", copy.deepcopy(tiny_torch_net), shapes_tiny.images, shapes_tiny.labels)
    nudged = copy.deepcopy(tiny_torch_net)
    with torch.no_grad():
        next(nudged.parameters()).view(-1)[0] += 1e-4
    assert CheckpointStore.key("audit", nudged, shapes_tiny.images, shapes_tiny.labels) != key
    relabelled = shapes_tiny.labels.copy()
    relabelled[0] = (relabelled[0] + 1) % 3
    assert CheckpointStore.key("audit", tiny_torch_net, shapes_tiny.images, relabelled) != key


def test_a_unit_saved_after_has_is_loaded_as_saved(tmp_path):
    """``has`` keeps what it read for the ``load`` that follows; saving the unit anew must drop that copy."""
    store = CheckpointStore(tmp_path / "store")
    key = store.key("unit", 2)
    store.save(key, {"v": 1})
    store.save_arrays(key, {"x": np.arange(2)})
    assert store.has(key) and store.has_arrays(key)
    store.save(key, {"v": 2})
    store.save_arrays(key, {"x": np.arange(5)})
    assert store.load(key) == {"v": 2}
    np.testing.assert_array_equal(store.load_arrays(key)["x"], np.arange(5))
    assert store.has(key) and store.load(store.key("unit", 2)) == {"v": 2}
    with pytest.raises(KeyError):
        store.load(store.key("unit", 3))


def test_objects_that_cannot_be_fingerprinted_are_named():
    with pytest.raises(InputError, match="cannot fingerprint a generator"):
        fingerprint(i for i in range(3))


def test_store_round_trips_json_and_arrays(tmp_path):
    store = CheckpointStore(tmp_path / "store")
    key = store.key("unit", 1)
    assert not store.has(key)
    assert store.get_or_compute(key, lambda: {"a": np.float32(1.5), "b": [np.int64(2)]}) == {"a": 1.5, "b": [2]}
    assert store.get_or_compute(key, lambda: pytest.fail("the stored value should be used")) == {"a": 1.5, "b": [2]}
    store.save_arrays(key, {"x": np.arange(3)})
    np.testing.assert_array_equal(store.load_arrays(key)["x"], [0, 1, 2])
    assert list(store.keys()) == [key]
    with pytest.raises(InputError, match="`key` must be a plain file name"):
        store.path("../escape")
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="`checkpoint_dir` must be a folder; '.*file' is an existing file"):
        CheckpointStore(tmp_path / "file")
    with pytest.raises(InputError, match="`out` must be a folder path; got int"):
        check_folder(3, "out")


WRITER = textwrap.dedent(
    """
    import sys
    from fitaudit.checkpoint import atomic_write_bytes

    target, size = sys.argv[1], int(sys.argv[2])
    version = 0
    while True:
        version = (version + 1) % 256
        atomic_write_bytes(target, bytes([version]) * size)
        print(version, flush=True)
    """
)


def test_a_kill_mid_write_leaves_the_old_file_or_the_new_one_never_half(tmp_path):
    """SIGKILL a process that rewrites a 16 MB file in a loop; the target is always absent or whole."""
    target, size = tmp_path / "unit.bin", 16 * 2**20
    # a kill lands between two writes now and then, so kill until one has landed mid-write (at most 20 times)
    for delay in [0.0, 0.05, 0.3] * 7:
        if any(p.name != target.name for p in tmp_path.iterdir()):
            break
        target.unlink(missing_ok=True)
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(target), str(size)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        try:
            assert writer.stdout is not None
            writer.stdout.readline()  # at least one complete write
            time.sleep(delay)
        finally:
            os.kill(writer.pid, signal.SIGKILL)
            writer.wait(timeout=30)
        assert writer.returncode == -signal.SIGKILL
        data = target.read_bytes()
        assert len(data) == size and data.count(data[:1]) == size  # one complete version
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != target.name]
    assert leftovers, "no kill landed mid-write (the writer spends nearly all its time writing)"
    assert all(name.startswith(".unit.bin.") and name.endswith(".tmp") for name in leftovers)
    store = CheckpointStore(tmp_path)
    assert list(store.keys()) == []  # temporary files are never read back as units
    assert [p.name for p in tmp_path.iterdir()] == [target.name]  # and the killed writer's are removed (issue 30)


def test_only_a_dead_writers_temporaries_are_removed(tmp_path):
    from fitaudit.checkpoint import _OWNER, remove_stale_temporaries

    host = _OWNER.rsplit("-", 1)[0]
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    files = {
        "dead": tmp_path / f".unit.json.{host}-{int(dead.stdout)}.k3j_x9.tmp",
        "alive": tmp_path / f".unit.json.{_OWNER}.a8b2c1.tmp",  # this process: still writing
        "other host": tmp_path / f".unit.json.elsewhere-{int(dead.stdout)}.q1w2e3.tmp",
        "a unit": tmp_path / "unit.json",
    }
    for path in files.values():
        path.write_text("{}")
    assert remove_stale_temporaries(tmp_path) == [files["dead"]]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(files[k].name for k in ("alive", "other host", "a unit"))


def test_atomic_write_replaces_and_cleans_up_on_error(tmp_path):
    path = atomic_write_bytes(tmp_path / "a" / "b.bin", b"one")
    atomic_write_bytes(path, b"two")
    assert path.read_bytes() == b"two"
    with pytest.raises(TypeError):
        atomic_write_bytes(path, "text")  # fails inside the write: the old file stays, no temporary left
    assert path.read_bytes() == b"two" and [p.name for p in path.parent.iterdir()] == ["b.bin"]


def test_json_units_hold_their_key_and_item(tmp_path):
    parallel_map(functools.partial(scaled, k=3), [4], checkpoint_dir=tmp_path)
    (unit,) = tmp_path.glob("*.json")
    document = json.loads(unit.read_text())
    assert document == {"key": unit.stem, "value": 12, "item": 4}
    function_key = fingerprint(functools.partial(scaled, k=3), code_fingerprint(scaled))
    assert Path(unit).stem == CheckpointStore.key(function_key, 4)


def test_atomic_writes_get_the_mode_of_an_ordinary_new_file(tmp_path):
    import os
    import stat

    from fitaudit.checkpoint import atomic_write_text

    umask = os.umask(0)
    os.umask(umask)
    path = atomic_write_text(tmp_path / "result.json", "{}")
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask


def test_functions_slicing_with_ellipsis_can_be_fingerprinted():
    from fitaudit.checkpoint import fingerprint

    def last_channel(x):
        return x[..., -1]

    assert fingerprint(last_channel) == fingerprint(last_channel)
    assert fingerprint(...) != fingerprint(None)


def test_the_code_key_covers_every_module_of_the_package(tmp_path):
    """Issue 30: the key followed module globals one level deep, so editing stats/bernstein.py or
    overfit/one_model.py (imported inside functions) left an audit part's key unchanged."""
    import shutil

    from fitaudit.checkpoint import PACKAGE_ROOT, package_fingerprint, source_digest

    assert package_fingerprint() == source_digest(PACKAGE_ROOT)
    copy = tmp_path / "fitaudit"
    shutil.copytree(PACKAGE_ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert source_digest(copy) == package_fingerprint()
    keys = {source_digest(copy)}
    for helper in ("stats/bernstein.py", "overfit/one_model.py", "measures/_ascent.py"):
        with open(copy / helper, "a") as handle:
            handle.write("\n# edited\n")
        keys.add(source_digest(copy))
    (copy / "overfit" / "extra.py").write_text("X = 1\n")  # a new module counts too
    keys.add(source_digest(copy))
    assert len(keys) == 5


_AUDIT_TWICE = """
import json, sys
from sklearn.datasets import make_moons
from sklearn.linear_model import LogisticRegression
import fitaudit
x, y = make_moons(240, noise=0.3, random_state=0)
model = LogisticRegression().fit(x[:160], y[:160])
result = fitaudit.audit(model, (x[160:], y[160:]), checkpoint_dir=sys.argv[1], options=fitaudit.RunOptions(progress=False))
print(json.dumps(sorted(p.id for p in result.parts if p.resumed)))
"""


@pytest.mark.slow
def test_an_edit_to_a_helper_module_is_not_served_an_old_audit_part(tmp_path):
    """End to end, in fresh processes on a copy of the package: an edit to stats/bernstein.py recomputes the part."""
    import shutil

    from fitaudit.checkpoint import PACKAGE_ROOT

    shutil.copytree(PACKAGE_ROOT, tmp_path / "src" / "fitaudit", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "src"), "OMP_NUM_THREADS": "1"}

    def resumed() -> list[str]:
        done = subprocess.run([sys.executable, "-c", _AUDIT_TWICE, str(tmp_path / "out")], env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    assert resumed() == []
    assert resumed() != []  # unchanged code: reused
    with open(tmp_path / "src" / "fitaudit" / "stats" / "bernstein.py", "a") as handle:
        handle.write("\n# edited\n")
    assert resumed() == []  # a helper two imports away from the part changed: computed again


