"""Zip archives bounded before they are inflated: ``.keras``, ``.skops`` and ``.npz`` files.

A zip file of a few megabytes can inflate to gigabytes (a ``.keras`` file whose
``model.weights.h5`` or ``config.json`` is a run of zeros). :func:`check_archive`
reads the central directory, which states every member's inflated size, and
refuses the file in one line, before any library inflates a byte, when a
member or the whole archive states more than the bounds
(:class:`fitaudit.data.limits.Limits`: ``archive_member_bytes``,
``archive_bytes``; a JSON member ``model_config_bytes``). A header may lie:
each compressed member is then inflated once, a chunk at a time, through
:mod:`zipfile`, which stops at the stated size and checks the CRC, so a member
whose data inflates past what its header says is refused with the memory of
one chunk. Stored (uncompressed) members must occupy exactly their stated
size. Readers that come after (keras, skops, numpy) read through
:mod:`zipfile` too, so they never inflate more than the sizes checked here.
"""

from __future__ import annotations

import os
import zipfile

from fitaudit._errors import InputError
from fitaudit._validation import size_text
from fitaudit.data.limits import check_bound

#: bytes inflated at a time when a compressed member is checked against its stated size
_CHUNK = 2**20


def check_archive(path: str | os.PathLike[str], *, name: str) -> None:
    """Refuse a zip archive whose members inflate past the size bounds or past their stated sizes.

    Parameters
    ----------
    path : path
        The archive; a file that is not a zip is left to its reader to refuse.
    name : str
        The argument or option naming the file in messages (``--model``).

    Raises
    ------
    InputError
        A member, a JSON member, or the archive in total stating more bytes
        than the bounds; a member inflating past (or short of) its stated size.
    """
    file = os.fspath(path)
    try:
        archive = zipfile.ZipFile(file)
    except (OSError, zipfile.BadZipFile, ValueError):
        return
    with archive:
        members = archive.infolist()
        for info in members:
            bound = "model_config_bytes" if info.filename.lower().endswith(".json") else "archive_member_bytes"
            check_bound(info.file_size, bound, f"`{name}`: {file!r}: member {info.filename!r} inflates to "
                        f"{size_text(info.file_size)} ({bound.replace('_', ' ')})")
        check_bound(sum(info.file_size for info in members), "archive_bytes",
                    f"`{name}`: {file!r}: its {len(members)} members inflate to "
                    f"{size_text(sum(info.file_size for info in members))} in all (archive bytes)")
        for info in members:
            _check_stated_size(archive, info, file, name)


def _check_stated_size(archive: zipfile.ZipFile, info: zipfile.ZipInfo, file: str, name: str) -> None:
    """Inflate one member a chunk at a time: zipfile stops at the stated size and checks the CRC."""
    lying = InputError(f"`{name}`: {file!r}: member {info.filename!r} does not inflate to the "
                       f"{size_text(info.file_size)} its header states (a zip bomb, or a corrupt file).")
    if info.compress_type == zipfile.ZIP_STORED:
        if info.compress_size != info.file_size:
            raise lying
        return
    try:
        with archive.open(info) as handle:
            while handle.read(_CHUNK):
                pass
    except Exception as exc:  # noqa: BLE001 -- BadZipFile (CRC, size), zlib.error, EOFError: all a lying member
        raise lying from exc
