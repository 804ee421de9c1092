"""One writer per output folder: a lock file that a killed run cannot leave held.

Two runs writing into one folder at once (``fitaudit audit --out A`` twice)
would interleave their parts and leave a report of one run beside the other's
JSON. :func:`writer_lock` holds ``FOLDER/.fitaudit-lock`` for the whole run:

* the lock is an advisory ``flock`` on that file (POSIX), which the operating
  system releases when its process ends, however it ends: a run killed with
  ``kill -9`` leaves the file but not the lock, and the next run takes it over
  (and says whose it was, :attr:`FolderLock.taken_over`);
* the file names its holder (process id, host, command, start time), so the
  second writer's one-line error says who holds the folder;
* a clean exit removes the file; a lock is re-entrant within one process (the
  command line and the library function it calls may both hold the same folder).

Advisory locks bind only programs that ask for them (every fitaudit command
does); on a network file system without ``flock`` support the lock is not
enforced, which :func:`writer_lock` cannot detect.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fitaudit._errors import InputError
from fitaudit.checkpoint import check_folder

#: the lock file's name inside the folder it guards
LOCK_NAME = ".fitaudit-lock"

#: folders this process holds, with how many times (re-entrant use)
_HELD: dict[Path, int] = {}


@dataclass(frozen=True)
class FolderLock:
    """A held lock: its file, and the holder it replaced (a killed run's record), if any."""

    path: Path
    taken_over: dict[str, Any] | None


def _holder(handle: Any) -> dict[str, Any] | None:
    """The holder recorded in an open lock file (``None`` when it is empty or unreadable)."""
    handle.seek(0)
    try:
        record = json.loads(handle.read() or "null")
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def holder_text(record: dict[str, Any] | None) -> str:
    """A recorded holder in words: ``pid 123 on host, `fitaudit audit`, since 2026-12-03 06:40:12``."""
    if not record:
        return "another process"
    started = record.get("started")
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)) if isinstance(started, (int, float)) else "?"
    return f"pid {record.get('pid')} on {record.get('host')}, `{record.get('command')}`, since {since}"


@contextlib.contextmanager
def writer_lock(folder: str | os.PathLike[str], *, option: str = "--out",
                command: str = "fitaudit") -> Iterator[FolderLock]:
    """Hold ``folder`` for writing for the duration of the ``with`` block.

    Parameters
    ----------
    folder : path
        The output folder (created if missing).
    option : str
        How the user named it (``"--out"``, ``"checkpoint_dir"``): the error names it.
    command : str
        What is writing, recorded for a second writer's message.

    Raises
    ------
    InputError
        When another live process holds the folder: one line naming it, its
        holder and what to do.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d, writer_lock(d) as lock:
    ...     lock.path.name, lock.taken_over
    ('.fitaudit-lock', None)
    """
    target = check_folder(folder, option).resolve()
    if target in _HELD:  # this process holds it already
        _HELD[target] += 1
        try:
            yield FolderLock(target / LOCK_NAME, None)
        finally:
            _HELD[target] -= 1
        return
    target.mkdir(parents=True, exist_ok=True)
    path = target / LOCK_NAME
    handle, previous = _acquire(path, folder, option)
    record = {"pid": os.getpid(), "host": socket.gethostname(), "command": command, "started": time.time()}
    handle.seek(0)
    handle.truncate()
    handle.write(json.dumps(record))
    handle.flush()
    _HELD[target] = 1
    try:
        yield FolderLock(path, previous)
    finally:
        del _HELD[target]
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # while still locked: a waiting opener then finds the file gone and retries
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def _acquire(path: Path, folder: Any, option: str) -> tuple[Any, dict[str, Any] | None]:
    """Open and lock ``path``, retrying while the file under the name changes (a holder removed it meanwhile)."""
    while True:
        handle = open(path, "a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(handle)
            handle.close()
            raise InputError(
                f"`{option}` {str(folder)!r} is being written by another fitaudit run ({holder_text(holder)}); "
                f"wait for it to finish, or give another `{option}`.") from None
        try:
            same = os.stat(path).st_ino == os.fstat(handle.fileno()).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return handle, _holder(handle)  # a record left here is a killed run's: its lock died with it
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()
