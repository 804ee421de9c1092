"""Size bounds on the files a user hands in, checked from their headers before any work.

A small file can claim a huge table or image: a CSV whose header line has
ten million columns, a parquet file of a few hundred kilobytes holding 30
million rows in one compressed row group, a PNG of 12000 x 12000 pixels.
Each is refused in one line, from what its header or metadata says, before
pandas, pyarrow or Pillow decodes it; a zip archive (a ``.keras``,
``.skops`` or ``.npz`` file) from the sizes its central directory states,
before any member is inflated (:mod:`fitaudit.data.archives`). The bounds (:class:`Limits`) are
generous for ordinary data and can be raised: ``--limit NAME=VALUE`` on the
command line (e.g. ``--limit table-rows=50000000``), :func:`using_limits`
in Python.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Sequence

from fitaudit._errors import InputError


@dataclasses.dataclass(frozen=True)
class Limits:
    """The largest inputs read (each raisable).

    Attributes
    ----------
    table_columns : int
        Columns of a CSV or parquet table (its header, or its metadata).
    table_rows : int
        Rows of a table.
    table_bytes : int
        Bytes of a table's data: a CSV file's size; a parquet file's size
        once decoded (its uncompressed size as its metadata records it, and
        at least 8 bytes a value).
    image_pixels : int
        Pixels of one image (width x height, from its header): 50 million
        is about 7000 x 7000, 150 MB as 8-bit RGB.
    archive_bytes : int
        Bytes a zip archive (``.keras``, ``.skops``, ``.npz``) inflates to in
        all, as its central directory states them
        (:func:`fitaudit.data.archives.check_archive`).
    archive_member_bytes : int
        Bytes one member of such an archive inflates to (a ``.keras`` file's
        ``model.weights.h5``, an ``.npz`` file's array).
    model_config_bytes : int
        Bytes of one JSON member of such an archive (a ``.keras`` file's
        ``config.json``, a ``.skops`` file's ``schema.json``), read whole and
        parsed (64 MiB; a model of a thousand layers has a config of a few
        megabytes).
    """

    table_columns: int = 100_000
    table_rows: int = 20_000_000
    table_bytes: int = 4 * 2**30
    image_pixels: int = 50_000_000
    archive_bytes: int = 4 * 2**30
    archive_member_bytes: int = 2 * 2**30
    model_config_bytes: int = 64 * 2**20


#: the option each bound is raised with on the command line (``--limit NAME=VALUE``)
OPTION_NAMES = {field.name.replace("_", "-"): field.name for field in dataclasses.fields(Limits)}

_current = [Limits()]


def limits() -> Limits:
    """The bounds in force."""
    return _current[-1]


@contextlib.contextmanager
def using_limits(**bounds: int) -> Iterator[Limits]:
    """Run a block with some bounds changed (``table_rows=50_000_000``); the others stay."""
    for key, value in bounds.items():
        if key not in Limits.__dataclass_fields__:
            raise InputError(f"`{key}` is not a size bound; the bounds are {', '.join(Limits.__dataclass_fields__)}.")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"`{key}` must be a positive integer; got {value!r}.")
    _current.append(dataclasses.replace(limits(), **bounds))
    try:
        yield _current[-1]
    finally:
        _current.pop()


def parse_limits(values: Sequence[str] | None, option: str = "--limit") -> dict[str, int]:
    """``["table-rows=5e7"]`` as ``{"table_rows": 50000000}`` (integers, plain or in e-notation)."""
    bounds: dict[str, int] = {}
    for text in values or ():
        name, sep, number = text.partition("=")
        if not sep or name.strip() not in OPTION_NAMES:
            raise InputError(f"`{option}` takes NAME=VALUE with NAME one of {', '.join(OPTION_NAMES)}; got {text!r}.")
        try:
            value = float(number)
        except ValueError:
            value = float("nan")
        if not value >= 1 or value != int(value) or value > 2**62:
            raise InputError(f"`{option}` {name.strip()} must be a positive integer; got {number!r}.")
        bounds[OPTION_NAMES[name.strip()]] = int(value)
    return bounds


def check_bound(value: int, bound: str, what: str) -> None:
    """Refuse ``value`` above the bound named ``bound`` (a :class:`Limits` field); ``what`` names the input."""
    allowed = getattr(limits(), bound)
    if value > allowed:
        option = bound.replace("_", "-")
        raise InputError(f"{what}: {value:,} is more than the {allowed:,} fitaudit reads "
                         f"(raise it with `--limit {option}={value}`, or `using_limits({bound}=...)` in Python).")
