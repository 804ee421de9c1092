"""An examination's data files: the result (JSON, without the query log) and the query log (npz).

Both go through the checkpoint module's atomic writers, so a reader sees the
old file or the whole new one. Figures and summaries are made by
:mod:`fitaudit.report.examine`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit.checkpoint import atomic_path, atomic_write_text


def write_examination(result: Any, folder: str | os.PathLike[str]) -> dict[str, Path]:
    """Write ``examination.json`` (no query log) and ``queries.npz`` into ``folder``; return their paths.

    The npz holds the examiner's queries and the uniform random reference
    queries (columns prefixed ``reference_``), as
    :func:`fitaudit.examine.result.load_queries` reads them.
    """
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    files = {"json": target / "examination.json", "queries": target / "queries.npz"}
    atomic_write_text(files["json"], json.dumps(result.to_dict(include_queries=False), indent=2) + "\n")
    arrays = {**result.queries, **{f"reference_{k}": v for k, v in result.reference_queries.items()}}
    with atomic_path(files["queries"]) as tmp, open(tmp, "wb") as handle:
        np.savez_compressed(handle, **arrays)
    return files
