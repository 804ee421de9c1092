"""Numbers as the report writes them (p-values, fixed decimals): shared by every module of words."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def pvalue(value: Any) -> str:
    """A p-value: two significant digits, scientific below 0.001."""
    if value is None:
        return "n/a"
    v = float(value)
    if not math.isfinite(v):
        return "n/a"
    return f"{v:.1e}" if v < 1e-3 else f"{v:.2g}"


def fixed(value: Any, digits: int = 3) -> str:
    """A number at ``digits`` decimals, ``n/a`` when absent or not finite."""
    if value is None or (isinstance(value, (float, np.floating)) and not math.isfinite(float(value))):
        return "n/a"
    return f"{float(value):.{digits}f}"
