"""Crafted zip archives for the bounded-inflation tests (tests/data/test_archives.py, tests/models)."""

from __future__ import annotations

import struct
import zipfile


def state_size(path, member, stated):
    """Rewrite the uncompressed size ``member``'s headers (local and central) state; its data stays."""
    with zipfile.ZipFile(path) as archive:
        offset = archive.getinfo(member).header_offset
    data = bytearray(path.read_bytes())
    struct.pack_into("<I", data, offset + 22, stated)
    start = data.find(b"PK\x01\x02")
    while start >= 0:
        length = struct.unpack_from("<H", data, start + 28)[0]
        if bytes(data[start + 46:start + 46 + length]) == member.encode():
            struct.pack_into("<I", data, start + 24, stated)
        start = data.find(b"PK\x01\x02", start + 4)
    path.write_bytes(bytes(data))


def zip_with(path, members, compression=zipfile.ZIP_DEFLATED):
    with zipfile.ZipFile(path, "w", compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path
