"""Whether an image file can be used, before any long run: :func:`image_problem`, :class:`BrokenImage`.

A fast pass for good JPEG and PNG files (the header, and the format's end
marker), a full decode only for suspects; symbolic links that dangle or
loop are broken (:func:`link_problem`).
"""

from __future__ import annotations

import dataclasses
import errno
import os

from fitaudit.data.decode import FORMATS_TEXT, IMAGE_FORMATS, load_image, mode_problem, open_image

_JPEG_END = b"\xff\xd9"
_PNG_END = b"IEND\xaeB`\x82"


@dataclasses.dataclass(frozen=True)
class BrokenImage:
    """A file that cannot be used as an image: its path and why."""

    path: str
    reason: str


def link_problem(path: str) -> str | None:
    """Why a symbolic link cannot be followed (it dangles or loops), or None (not a link, or a good one)."""
    if not os.path.islink(path):
        return None
    try:
        os.stat(path)
    except OSError as exc:
        return "a symbolic link that loops" if exc.errno == errno.ELOOP else "a symbolic link to a missing file"
    return None


def _ends_cleanly(path: str, image_format: str) -> bool:
    """Whether the file ends with its format's end marker (JPEG EOI, PNG IEND): a truncation check."""
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - 64))
        tail = handle.read()
    if image_format == "JPEG":
        return tail.rstrip(b"\x00\r\n ").endswith(_JPEG_END)
    return tail.endswith(_PNG_END)


def image_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` is not a usable image, or None when it is.

    Fast for good JPEG and PNG files: Pillow reads the header only (format
    and mode, :func:`fitaudit.data.decode.mode_problem`), and the file's
    last bytes must hold the format's end marker; a file without it (a
    truncated download, or trailing data) and every other format is decoded
    in full, and is broken only if that fails. A symbolic link that dangles
    or loops is broken.
    """
    name = os.fspath(path)
    link = link_problem(name)
    if link:
        return link
    try:
        with open_image(name) as image:
            image_format = image.format
            problem = mode_problem(image)
    except Exception as exc:  # Pillow raises UnidentifiedImageError, OSError, DecompressionBombError...
        return f"not an image Pillow can read ({type(exc).__name__})"
    if image_format not in IMAGE_FORMATS:
        return f"a {image_format} image, not {FORMATS_TEXT}"
    if problem:
        return problem
    if image_format in ("JPEG", "PNG") and _ends_cleanly(name, image_format):
        return None
    try:
        load_image(name)
    except Exception as exc:  # truncated or corrupt data
        return f"truncated or corrupt {image_format} ({exc})"
    return None
