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

from collections.abc import Callable
from typing import Any

from fitaudit._errors import InputError
from fitaudit.results import Result

FORMATS = ("markdown", "html", "figure")

_RENDERERS: dict[tuple[str, str], Callable[..., Any]] = {}


def register_renderer(result_type: str, fmt: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: ``renderer(result, **options)`` draws ``result_type`` in ``fmt``."""
    if fmt not in FORMATS:
        raise InputError(f"`fmt` must be one of {', '.join(FORMATS)}; got {fmt!r}.")

    def decorate(renderer: Callable[..., Any]) -> Callable[..., Any]:
        _RENDERERS[(result_type, fmt)] = renderer
        return renderer

    return decorate


def _load_renderers() -> None:
    """The modules of this package whose renderers fill the table (explicit imports, on first use)."""
    from fitaudit.report import (  # noqa: F401 - each module registers its renderers with the decorator above
        audit,
        examine,
        examine_images,
        first_questions,
        overfit,
        pgdl,
        pmv,
        reproductions,
        shapes,
    )


def loadable_types() -> dict[str, type[Result]]:
    """Every result type :func:`load_result` reads, by name: explicit imports into a plain dict.

    Nothing is registered by importing: a saved file names its type (its
    ``"type"``), and this list says which types may be read back (an
    audit, which combines them, loads with :func:`fitaudit.auditing.load_audit`).
    """
    from fitaudit.examine import ExaminationResult, QueryEmbedding, WeaknessReport
    from fitaudit.experiments.examine import ExaminerReproduction, ImageExaminerReproduction
    from fitaudit.experiments.overfit import (
        OverfitImageFolderReproduction,
        OverfitShapesReproduction,
        SyntheticReproductionResult,
    )
    from fitaudit.experiments.pmv import (
        MLPWidthReproduction,
        PMVComparisonReproduction,
        TreeDepthReproduction,
    )
    from fitaudit.leakage import LeakageResult
    from fitaudit.models.inspection import InspectResult
    from fitaudit.models.training import TrainingResult
    from fitaudit.overfit import (
        CITestResult,
        NModelTestResult,
        OverfitCommandResult,
        OverfitTestResult,
        PairwiseTestResult,
    )
    from fitaudit.overfit.g3 import G3Check
    from fitaudit.pgdl import (
        ConditionalMI,
        GranulatedKendall,
        Leaderboard,
        MeasureScore,
        ModelRanking,
        TaskScores,
    )
    from fitaudit.pmv import PMVComparison, PMVResult
    from fitaudit.results import types_of
    from fitaudit.stats import AccuracyResult, AgreementResult

    return types_of(
        ExaminationResult, QueryEmbedding, WeaknessReport, LeakageResult, CITestResult, NModelTestResult,
        OverfitTestResult, PairwiseTestResult, OverfitCommandResult, Leaderboard, MeasureScore, TaskScores,
        ModelRanking, ConditionalMI, GranulatedKendall, PMVResult, PMVComparison, AccuracyResult, AgreementResult,
        InspectResult, TrainingResult, ExaminerReproduction, ImageExaminerReproduction,
        OverfitImageFolderReproduction, OverfitShapesReproduction, SyntheticReproductionResult,
        MLPWidthReproduction, PMVComparisonReproduction, TreeDepthReproduction, G3Check)


def load_result(data: dict[str, Any]) -> Result:
    """A result of any instrument from its :meth:`~fitaudit.results.Result.to_dict` form, validated.

    The types it may be are :func:`loadable_types`; the loading itself is
    :func:`fitaudit.results.load_result`.
    """
    from fitaudit.results import load_result as load

    return load(data, types=loadable_types())


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


def save_audit(result: Any, out: Any) -> dict[str, Any]:
    """Write an audit's ``audit.json`` and ``report.html`` into the folder ``out`` as one unit; return their paths."""
    from fitaudit.report.audit import save_audit as save

    return save(result, out)


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
