"""The report layer: every picture, table and page is made here.

Results are pure data (:class:`fitaudit.results.Result`); this package turns
them into figures (matplotlib), markdown and HTML. Renderers are registered
per result type and format with :func:`register_renderer` in the modules of
this package (one module per instrument or result family) and found through
one dispatch, :func:`render`. A result saved as JSON renders the same way:
:func:`load_result` rebuilds it first.

Formats
-------
``"markdown"``
    text (str), for terminals and markdown reports;
``"html"``
    an HTML fragment (str), for the audit report and notebooks;
``"figure"``
    a :class:`matplotlib.figure.Figure` (call :func:`save_figure`).

matplotlib is imported only here (``grep -rn matplotlib src/fitaudit`` finds
it nowhere else) and uses the non-interactive Agg backend.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from fitaudit._errors import InputError
from fitaudit.results import Result

FORMATS = ("markdown", "html", "figure")

_RENDERERS: dict[tuple[str, str], Callable[..., Any]] = {}

#: modules of this package that register renderers (imported on first use)
_RENDERER_MODULES: tuple[str, ...] = (
    "reproductions", "overfit", "pmv", "shapes", "examine", "examine_images", "pgdl", "audit", "first_questions",
)

def register_renderer(result_type: str, fmt: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: ``renderer(result, **options)`` draws ``result_type`` in ``fmt``."""
    if fmt not in FORMATS:
        raise InputError(f"`fmt` must be one of {', '.join(FORMATS)}; got {fmt!r}.")

    def decorate(renderer: Callable[..., Any]) -> Callable[..., Any]:
        _RENDERERS[(result_type, fmt)] = renderer
        return renderer

    return decorate


def _load_renderers() -> None:
    for module in _RENDERER_MODULES:
        importlib.import_module(f"fitaudit.report.{module}")


def load_result(data: dict[str, Any]) -> Result:
    """A result of any instrument from its :meth:`~fitaudit.results.Result.to_dict` form, validated.

    The instruments' result types are registered first; the loading itself
    is :func:`fitaudit.results.load_result` (audits: :func:`fitaudit.auditing.load_audit`).
    """
    import fitaudit.experiments.examine
    import fitaudit.experiments.overfit
    import fitaudit.experiments.pmv
    import fitaudit.leakage
    import fitaudit.pgdl.leaderboard
    import fitaudit.stats  # noqa: F401 - importing a module registers its result types
    from fitaudit.examine import ExaminationResult
    from fitaudit.overfit import (
        CITestResult,
        NModelTestResult,
        OverfitTestResult,
        PairwiseTestResult,
    )
    from fitaudit.pmv import PMVComparison, PMVResult
    from fitaudit.results import load_result as load

    del ExaminationResult, CITestResult, NModelTestResult, OverfitTestResult, PairwiseTestResult, PMVComparison
    del PMVResult

    return load(data)


def renderers(result_type: str) -> list[str]:
    """Formats available for ``result_type``."""
    _load_renderers()
    return [fmt for (name, fmt) in _RENDERERS if name == result_type]


def render(result: Result | dict[str, Any], fmt: str = "markdown", **options: Any) -> Any:
    """Render a result (or its saved dict) in ``fmt`` through the renderer registered for its type.

    Raises
    ------
    InputError
        An unknown format, or no renderer for this result type and format.
    """
    if fmt not in FORMATS:
        raise InputError(f"`fmt` must be one of {', '.join(FORMATS)}; got {fmt!r}.")
    if isinstance(result, dict):
        result = load_result(result)
    if not isinstance(result, Result):
        raise InputError(f"`result` must be a fitaudit Result or its to_dict(); got {type(result).__name__}.")
    _load_renderers()
    for cls in type(result).__mro__:
        renderer = _RENDERERS.get((cls.__name__, fmt))
        if renderer is not None:
            return renderer(result, **options)
    available = renderers(type(result).__name__)
    raise InputError(
        f"no {fmt} renderer for {type(result).__name__}"
        + (f" (available: {', '.join(available)})." if available else ".")
    )


def audit_page(result: Any, path: Any = None, *, json_digest: str | None = None) -> Any:
    """The self-contained HTML report of an audit; written atomically to ``path`` if given (returns the path).

    ``json_digest``: the SHA-256 of the audit.json text it is drawn from (default: of ``result``'s JSON).
    """
    from fitaudit.report.audit import write_page

    return write_page(result, path, json_digest=json_digest)


def save_audit(result: Any, folder: Any) -> dict[str, Any]:
    """Write an audit's ``audit.json`` and ``report.html`` into ``folder`` as one unit; return their paths."""
    from fitaudit.report.audit import save_audit as save

    return save(result, folder)


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


def new_figure(*args: Any, **kwargs: Any) -> Any:
    """``plt.subplots`` on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(*args, **kwargs)
