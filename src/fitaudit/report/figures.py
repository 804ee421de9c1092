"""Figures on matplotlib's non-interactive Agg backend (no display needed): made and saved here.

matplotlib is imported only in :mod:`fitaudit.report`, and only when a
figure is made, so importing the report layer stays cheap.
"""

from __future__ import annotations

from typing import Any


def new_figure(*args: Any, **kwargs: Any) -> Any:
    """``plt.subplots`` on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(*args, **kwargs)


def save_figure(figure: Any, path: Any, *, dpi: int = 120) -> Any:
    """Save a matplotlib figure (PNG/SVG/PDF by suffix) and close it; return the path."""
    from pathlib import Path

    import matplotlib.pyplot as plt

    from fitaudit.checkpoint import atomic_path

    target = Path(path)
    with atomic_path(target) as tmp:  # a reader sees the old file or the whole new one
        figure.savefig(tmp, format=target.suffix.lstrip(".").lower() or "png", dpi=dpi, bbox_inches="tight")
    plt.close(figure)
    return target
