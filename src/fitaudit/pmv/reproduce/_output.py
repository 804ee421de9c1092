"""Writing a reproduction's JSON, markdown table and figure, and its shared options."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from fitaudit.results import to_jsonable


def add_common_options(parser: argparse.ArgumentParser, default_out: str) -> None:
    """``--quick``, ``--out``, ``--seed`` and ``--n-jobs``."""
    parser.add_argument("--quick", action="store_true", help="small run for tests (seconds)")
    parser.add_argument("--out", default=default_out, help="folder for the JSON, markdown and PNG")
    parser.add_argument("--seed", type=int, default=0, help="seed of perturbations and splits")
    parser.add_argument("--n-jobs", type=int, default=None, help="parallel fits (joblib)")


def write_outputs(
    out: str | Path, name: str, payload: dict[str, Any], table: str, figure: Any
) -> dict[str, Any]:
    """Write ``NAME.json``, ``NAME.md`` and ``NAME.png`` under ``out``; return the payload with their paths."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    files = {kind: str(folder / f"{name}.{kind}") for kind in ("json", "md", "png")}
    result = {**to_jsonable(payload), "files": files}
    Path(files["json"]).write_text(json.dumps(result, indent=2))
    Path(files["md"]).write_text(table + "\n")
    figure.savefig(files["png"], dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(figure)
    return result
