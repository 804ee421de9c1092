"""Reproductions of Zhang et al. (2019), "Perturbed Model Validation".

``fitaudit reproduce pmv-comparison`` (experiments a and b of METHODS.md
section 4), ``pmv-tree-depth`` (c) and ``pmv-mlp-width`` (d). Each writes a
JSON file, a markdown table and a PNG under ``--out``; ``--quick`` is a
seconds-long version for tests.
"""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add the three PMV reproductions under ``fitaudit reproduce``."""
    from fitaudit.pmv.reproduce import comparison, mlp_width, tree_depth

    for module in (comparison, tree_depth, mlp_width):
        module.register(subparsers, parents)
