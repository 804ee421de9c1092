"""One fingerprinted, atomic store for every resumable unit of work.

Long work in fitaudit (retraining for the N-model test and PMV, training a
CNN, examining instances, building a model zoo, the parts of an audit) is
split into units. A finished unit is written to a :class:`CheckpointStore`
under a *key* that fingerprints everything it was computed from: the
function (qualified name and the hash of its code), its bound arguments,
the data, the model weights and the settings (:func:`fingerprint`). A run
started again with the same folder reuses a unit only if its key is the
same, so a changed setting, data set or model never returns an old result.

Files are written atomically (a temporary file in the same folder, flushed
and renamed over the target), so a process killed mid-write leaves either
the old complete file or none, never a half file that is read back; the
temporary file such a kill leaves is removed by the next run that opens the
folder (:func:`remove_stale_temporaries`).

Nothing is pickled: results are JSON (:func:`fitaudit.results.to_jsonable`)
or numpy arrays in ``.npz`` files read with ``allow_pickle=False``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import inspect
import json
import os
import re
import socket
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit._errors import InputError

#: bump when the encoding below changes, so that old keys are never matched
_FINGERPRINT_VERSION = b"fitaudit-fingerprint-1"


def _update(h: Any, value: Any, seen: set[int]) -> None:
    """Feed a canonical, type-tagged encoding of ``value`` into the hash ``h``."""
    if isinstance(value, np.generic) and not isinstance(value, np.void):  # np.float64(1.0) as 1.0
        value = value.item()
    if value is None or value is Ellipsis or isinstance(value, (bool, int, float, str, bytes, complex)):
        h.update(f"<{type(value).__name__}:{value!r}>".encode())
        return
    if isinstance(value, np.ndarray):
        array = np.ascontiguousarray(value)
        h.update(f"<ndarray:{array.dtype.str}:{array.shape}>".encode())
        if array.dtype == object:
            for item in array.ravel():
                _update(h, item, seen)
        else:
            h.update(array.tobytes())
        return
    if isinstance(value, np.random.Generator):  # its current state decides what it draws next
        h.update(b"<generator>")
        _update(h, value.bit_generator.state, seen)
        return
    if isinstance(value, np.random.SeedSequence):
        h.update(b"<seedsequence>")
        _update(h, [value.entropy, value.spawn_key, value.pool_size, value.n_children_spawned], seen)
        return
    if isinstance(value, os.PathLike):
        h.update(f"<path:{os.fspath(value)}>".encode())
        return
    ident = id(value)
    if ident in seen:
        h.update(b"<cycle>")
        return
    seen = seen | {ident}
    own = getattr(value, "fingerprint", None)
    if callable(own) and not isinstance(value, type):
        h.update(f"<own:{type(value).__qualname__}:{own()}>".encode())
        return
    if isinstance(value, Mapping):
        h.update(f"<map:{len(value)}>".encode())
        for key in sorted(value, key=repr):
            _update(h, key, seen)
            _update(h, value[key], seen)
        return
    if isinstance(value, (list, tuple)):
        h.update(f"<seq:{type(value).__name__}:{len(value)}>".encode())
        for item in value:
            _update(h, item, seen)
        return
    if isinstance(value, (set, frozenset)):
        _update(h, sorted(value, key=repr), seen)
        return
    if isinstance(value, functools.partial):
        h.update(b"<partial>")
        _update(h, value.func, seen)
        _update(h, value.args, seen)
        _update(h, value.keywords, seen)
        return
    if isinstance(value, type):
        h.update(f"<class:{value.__module__}.{value.__qualname__}>".encode())
        return
    if inspect.ismethod(value):  # a bound method: its function and the object it is bound to
        h.update(b"<method>")
        _update(h, value.__func__, seen)
        _update(h, value.__self__, seen)
        return
    code = getattr(value, "__code__", None)
    if code is not None:  # a Python function: its name, its code and what it closes over
        h.update(f"<function:{value.__module__}.{value.__qualname__}>".encode())
        h.update(code.co_code)
        _update(h, [c for c in code.co_consts if not hasattr(c, "co_code")], seen)
        _update(h, getattr(value, "__defaults__", None), seen)
        _update(h, getattr(value, "__kwdefaults__", None), seen)
        closure = getattr(value, "__closure__", None) or ()
        _update(h, [cell.cell_contents for cell in closure], seen)
        return
    if _is_torch_module(value):
        h.update(f"<torch:{type(value).__qualname__}:{value!r}>".encode())
        for name, tensor in value.state_dict().items():
            _update(h, name, seen)
            _update(h, tensor.detach().cpu().numpy(), seen)
        return
    if _is_torch_tensor(value):
        _update(h, value.detach().cpu().numpy(), seen)
        return
    if _is_table(value):  # a pandas DataFrame or Series: labels and values
        h.update(f"<table:{type(value).__qualname__}>".encode())
        _update(h, [list(getattr(value, "columns", [])), value.index.to_numpy(), value.to_numpy()], seen)
        return
    if dataclasses.is_dataclass(value):
        h.update(f"<dataclass:{type(value).__qualname__}>".encode())
        for field in dataclasses.fields(value):
            _update(h, field.name, seen)
            _update(h, getattr(value, field.name), seen)
        return
    describe = getattr(value, "describe", None)
    if callable(describe):
        h.update(f"<described:{type(value).__qualname__}>".encode())
        _update(h, describe(), seen)
        return
    attributes = getattr(value, "__dict__", None)
    if attributes is not None:  # e.g. a scikit-learn estimator: parameters and fitted state
        h.update(f"<object:{type(value).__module__}.{type(value).__qualname__}>".encode())
        _update(h, attributes, seen)
        return
    getstate = getattr(type(value), "__getstate__", None)
    if getstate is not None and getstate is not object.__getstate__:  # e.g. scikit-learn's Cython Tree
        h.update(f"<state:{type(value).__module__}.{type(value).__qualname__}>".encode())
        _update(h, value.__getstate__(), seen)
        return
    if isinstance(value, slice):  # e.g. a fitted ColumnTransformer's output_indices_
        h.update(b"<slice>")
        _update(h, [value.start, value.stop, value.step], seen)
        return
    reduced = _reduced_state(value)
    if reduced is not None:  # e.g. a Cython object (scikit-learn's loss of a gradient-boosting model)
        h.update(f"<reduced:{type(value).__module__}.{type(value).__qualname__}>".encode())
        _update(h, reduced, seen)
        return
    qualname = getattr(value, "__qualname__", None)
    if callable(value) and qualname is not None:  # a builtin or C function: its name
        h.update(f"<callable:{getattr(value, '__module__', None)}.{qualname}>".encode())
        return
    raise InputError(
        f"cannot fingerprint a {type(value).__qualname__}: give it a fingerprint() or describe() "
        "method, or pass plain data (numbers, strings, arrays, dicts, lists)."
    )


def _reduced_state(value: Any) -> tuple[Any, ...] | None:
    """The arguments and state an extension object's own ``__reduce__`` gives ``pickle`` (else ``None``).

    Only the in-memory object's own ``__reduce_ex__`` is called: nothing is
    unpickled. The reconstructor callable is left out (its identity is the
    class, hashed by the caller); a module-level function such as Cython's
    ``__pyx_unpickle_*`` would otherwise be hashed by name only anyway.
    """
    cls = type(value)
    if isinstance(value, type) or callable(value) or (
        cls.__reduce__ is object.__reduce__ and cls.__reduce_ex__ is object.__reduce_ex__
    ):  # no reduction of its own: object's default would say nothing of hidden state
        return None
    try:
        reduced = value.__reduce_ex__(4)
    except Exception:  # not picklable: nothing to read
        return None
    if not isinstance(reduced, tuple) or len(reduced) < 2:
        return None
    return tuple(reduced[1:3])


def _is_torch_module(value: Any) -> bool:
    return any(c.__module__ == "torch.nn.modules.module" and c.__name__ == "Module" for c in type(value).__mro__)


def _is_table(value: Any) -> bool:
    return callable(getattr(value, "to_numpy", None)) and callable(getattr(getattr(value, "index", None), "to_numpy", None))


def _is_torch_tensor(value: Any) -> bool:
    return any(c.__module__ == "torch" and c.__name__ == "Tensor" for c in type(value).__mro__)


def fingerprint(*parts: Any) -> str:
    """A hex SHA-256 of everything in ``parts``: functions, arguments, data, models.

    Encodes numbers with their type, arrays with dtype, shape and bytes,
    mappings by sorted key, functions by qualified name, code, defaults and
    closure, ``functools.partial`` by function and bound arguments, torch
    modules by their state dict, random generators by their state, objects
    by their ``fingerprint()`` or ``describe()`` or, failing those, their
    attributes or pickling state (so a fitted scikit-learn estimator is keyed
    by its parameters and fitted state, trees included).
    """
    h = hashlib.sha256(_FINGERPRINT_VERSION)
    _update(h, parts, set())
    return h.hexdigest()


@functools.cache
def _default_file_mode() -> int:
    """0o666 less the process umask: the mode ``open()`` would give a new file (read at the first write)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


#: the installed package whose source keys every unit (:func:`package_fingerprint`)
PACKAGE_ROOT = Path(__file__).resolve().parent


def source_digest(root: str | os.PathLike[str]) -> str:
    """SHA-256 of every ``.py`` file under ``root``: relative names and bytes, in sorted order."""
    folder = Path(root)
    digest = hashlib.sha256(b"fitaudit-source-1")
    for path in sorted(folder.rglob("*.py")):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


@functools.cache
def package_fingerprint() -> str:
    """:func:`source_digest` of the installed fitaudit package, computed once per process.

    Every resumable unit's key holds it, so any edit to fitaudit's code (a
    helper module however far from the unit's function) is never served a
    result computed by the older code.
    """
    return source_digest(PACKAGE_ROOT)


def code_fingerprint(*objects: Any) -> str:
    """Fingerprint of the code behind ``objects`` (classes or functions, partials unwrapped).

    :func:`package_fingerprint` (all of fitaudit's source) and the source of
    every module outside fitaudit that defines one of ``objects`` (for a
    class, every class of its MRO): a user's function given to
    :func:`fitaudit.parallel.parallel_map`, a user's examiner. A module
    without readable source counts by its name.
    """
    names: set[str] = set()
    for obj in objects:
        while isinstance(obj, functools.partial):
            obj = obj.func
        owners = obj.__mro__ if isinstance(obj, type) else (obj,)
        names |= {c.__module__ for c in owners if c is not object and getattr(c, "__module__", None) in sys.modules}
    sources = []
    for name in sorted(n for n in names if n != "fitaudit" and not n.startswith("fitaudit.")):
        try:
            sources.append(inspect.getsource(sys.modules[name]))
        except (OSError, TypeError):
            sources.append(name)
    return fingerprint(package_fingerprint(), sources)


#: who writes a temporary file (``host-pid``, in its name), so a later run can tell a killed writer's leftovers
_OWNER = f"{socket.gethostname().replace('.', '_')}-{os.getpid()}"
_TEMPORARY = re.compile(r"^\..+\.(?P<host>[^.]+)-(?P<pid>\d+)\.[^.]+\.tmp$")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_stale_temporaries(folder: str | os.PathLike[str]) -> list[Path]:
    """Delete the temporary files of :func:`atomic_path` that a killed process left in ``folder``.

    Only files written by a process of this host that no longer runs (the
    ``host-pid`` in the name); a live writer's file, or another host's, is
    left alone. Returns the files removed.
    """
    here = socket.gethostname().replace(".", "_")
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    for entry in entries:
        found = _TEMPORARY.match(entry.name) if entry.name.startswith(".") else None
        if found and found["host"] == here and not _alive(int(found["pid"])) and entry.is_file(follow_symlinks=False):
            Path(entry.path).unlink(missing_ok=True)
            removed.append(Path(entry.path))
    return removed


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A private temporary path beside ``path``; on success it replaces ``path``, on failure it is removed.

    For writers that need a file name (h5py, safetensors): a reader sees the
    old file or the whole new one, two writers never share a temporary, and
    the new file gets the mode of an ordinary new file.
    """
    target = Path(path)
    if target.is_dir():  # else the work is done and the final rename fails, naming the temporary file
        raise InputError(f"cannot write the file {str(target)!r}: it is a folder.")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.{_OWNER}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        os.chmod(tmp, _default_file_mode())  # mkstemp makes 0600; results are ordinary files
        yield tmp
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` so that a reader sees the old file, or the whole new one."""
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    return Path(path)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """:func:`atomic_write_bytes` for UTF-8 text."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_save_npz(path: str | os.PathLike[str], arrays: dict[str, Any], *, compressed: bool = True) -> Path:
    """Write ``arrays`` as a numpy ``.npz`` archive at ``path``, atomically (see :func:`atomic_path`)."""
    save = np.savez_compressed if compressed else np.savez
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        save(handle, **arrays)
        handle.flush()
        os.fsync(handle.fileno())
    return Path(path)


def atomic_save_npy(path: str | os.PathLike[str], array: Any) -> Path:
    """Write one array as a numpy ``.npy`` file at ``path``, atomically (see :func:`atomic_path`)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        np.save(handle, array, allow_pickle=False)
        handle.flush()
        os.fsync(handle.fileno())
    return Path(path)


def check_folder(folder: Any, name: str = "checkpoint_dir") -> Path:
    """A path that is a folder or does not exist yet (an existing file is an error)."""
    if not isinstance(folder, (str, os.PathLike)):
        raise InputError(f"`{name}` must be a folder path; got {type(folder).__name__}.")
    path = Path(folder)
    if path.exists() and not path.is_dir():
        raise InputError(f"`{name}` must be a folder; {str(path)!r} is an existing file.")
    return path


class CheckpointStore:
    """A folder of finished units, each a JSON document or an ``.npz`` of arrays.

    Parameters
    ----------
    folder : path
        Created on first write. An existing file there is an error.

    Examples
    --------
    >>> store = CheckpointStore(tmp_path)                        # doctest: +SKIP
    >>> key = store.key(train, settings, x, y)                   # doctest: +SKIP
    >>> result = store.get_or_compute(key, lambda: train(settings, x, y))  # doctest: +SKIP
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = check_folder(folder, "checkpoint_dir")
        remove_stale_temporaries(self.folder)  # a killed run's half-written units

    def __repr__(self) -> str:
        return f"CheckpointStore({str(self.folder)!r})"

    @staticmethod
    def key(*parts: Any) -> str:
        """The key of a unit computed from ``parts`` (see :func:`fingerprint`)."""
        return fingerprint(*parts)[:32]

    def path(self, key: str, suffix: str = ".json") -> Path:
        """Where the unit ``key`` lives."""
        if not key or any(c in key for c in "/\\") or key.startswith("."):
            raise InputError(f"`key` must be a plain file name; got {key!r}.")
        return self.folder / f"{key}{suffix}"

    def has(self, key: str) -> bool:
        """Whether a finished, readable JSON unit ``key`` exists.

        A unit that cannot be read back (truncated, edited) counts as missing:
        it is removed with a note on stderr, so the unit is computed again.
        The value read is kept for the :meth:`load` that follows.
        """
        path = self.path(key)
        if not path.is_file():
            return False
        try:
            self._read = (key, json.loads(path.read_text())["value"])
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, RecursionError) as exc:
            self._unreadable(path, exc)
            return False
        return True

    def _unreadable(self, path: Path, exc: BaseException) -> None:
        """Remove a stored unit that cannot be read (it is then missing, and computed again), with a note."""
        path.unlink(missing_ok=True)
        print(f"fitaudit: note: {str(path)!r} could not be read back ({type(exc).__name__}); "
              "removed, to be computed again.", file=sys.stderr)

    def load(self, key: str) -> Any:
        """The JSON value stored under ``key`` (``KeyError`` if there is none or it cannot be read)."""
        return self._take("_read", key, self.has)

    def save(self, key: str, value: Any, **metadata: Any) -> Any:
        """Store ``value`` (made JSON-safe) atomically; return the stored form."""
        from fitaudit.results import to_jsonable

        stored = to_jsonable(value)
        self._forget(key)
        document = {"key": key, "value": stored, **to_jsonable(metadata)}
        atomic_write_text(self.path(key), json.dumps(document))
        return stored

    def get_or_compute(self, key: str, compute: Callable[[], Any], **metadata: Any) -> Any:
        """The stored value of ``key``, or ``compute()`` stored under it."""
        if self.has(key):
            return self.load(key)
        return self.save(key, compute(), **metadata)

    def save_arrays(self, key: str, arrays: Mapping[str, Any]) -> Path:
        """Store numeric arrays atomically as ``KEY.npz``."""
        import io

        self._forget(key)
        buffer = io.BytesIO()
        np.savez(buffer, **{name: np.asarray(a) for name, a in arrays.items()})  # type: ignore[arg-type]
        return atomic_write_bytes(self.path(key, ".npz"), buffer.getvalue())

    def has_arrays(self, key: str) -> bool:
        """Whether a readable ``KEY.npz`` exists (one that cannot be read is removed, as in :meth:`has`)."""
        path = self.path(key, ".npz")
        if not path.is_file():
            return False
        try:
            with np.load(path, allow_pickle=False) as data:
                self._arrays = (key, {name: data[name] for name in data.files})
        except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as exc:
            self._unreadable(path, exc)
            return False
        return True

    def load_arrays(self, key: str) -> dict[str, np.ndarray]:
        """The arrays of ``KEY.npz`` (never unpickled; ``KeyError`` if there are none or they cannot be read)."""
        return self._take("_arrays", key, self.has_arrays)

    def _take(self, slot: str, key: str, check: Callable[[str], bool]) -> Any:
        """The value :meth:`has` (``slot`` ``"_read"``) or :meth:`has_arrays` (``"_arrays"``) read for ``key``,
        read now when it holds another key's; ``KeyError`` when there is none or it cannot be read."""
        read = self.__dict__.pop(slot, None)
        if read is None or read[0] != key:
            if not check(key):
                raise KeyError(key)
            read = self.__dict__.pop(slot)
        return read[1]

    def _forget(self, key: str) -> None:
        """Drop what :meth:`has` / :meth:`has_arrays` read for ``key``: the unit is being written anew."""
        for slot in ("_read", "_arrays"):
            read = self.__dict__.get(slot)
            if read is not None and read[0] == key:
                self.__dict__.pop(slot, None)

    def subfolder(self, name: str) -> Path:
        """A folder inside the store for units with files of their own (a model, a log)."""
        path = self.path(name, "")
        path.mkdir(parents=True, exist_ok=True)
        return path

    def keys(self) -> Iterator[str]:
        """Keys of the JSON units present."""
        if not self.folder.is_dir():
            return iter(())
        return (p.stem for p in sorted(self.folder.glob("*.json")) if not p.name.startswith("."))
