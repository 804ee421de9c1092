"""The report layer: every picture, table and page is made here.

Results are pure data (:class:`fitaudit.results.Result`); this package turns
them into figures (matplotlib), markdown and HTML. Each module of this
package that draws results (one per instrument or result family) ends with
a plain dict ``RENDERERS``, (result type name, format) -> function;
:func:`renderer_table` gathers them by explicit import, here and nowhere
else, and :func:`render` dispatches through it. No renderer module imports
this one: a renderer that draws other results (the audit page draws its
parts, a reproduction its figure) is handed :func:`render`. A result saved
as JSON renders the same way: :func:`load_result` rebuilds it first.

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

import functools
import os
from collections.abc import Callable
from typing import Any

from fitaudit._errors import InputError
from fitaudit.report.figures import new_figure, save_figure
from fitaudit.results import NOTEBOOK_VIEWS, Result

__all__ = ["FORMATS", "audit_page", "load_audit", "load_result", "new_figure", "render", "renderer_table",
           "renderers", "save_audit", "save_figure", "save_reproduction"]

FORMATS = ("markdown", "html", "figure")

@functools.cache
def renderer_table() -> dict[tuple[str, str], Callable[..., Any]]:
    """Every renderer by (result type name, format): the renderer modules' ``RENDERERS``, by explicit import.

    Imported on first use, so that importing the report layer (its words, for
    a command's summary) loads none of the drawing code.
    """
    from fitaudit.report import (
        audit,
        calibration,
        examine,
        examine_images,
        first_questions,
        overfit,
        pgdl,
        pmv,
        reproductions,
    )

    table: dict[tuple[str, str], Callable[..., Any]] = {}
    for module in (calibration, examine, examine_images, first_questions, overfit, pgdl, pmv, reproductions):
        table.update(module.RENDERERS)
    table[("AuditResult", "html")] = functools.partial(audit.audit_html, render=render)
    table[("AuditResult", "markdown")] = audit.audit_markdown
    return table


def load_result(data: dict[str, Any]) -> Result:
    """A result of any instrument from its :meth:`~fitaudit.results.Result.to_dict` form, validated.

    Any registered type (:func:`fitaudit.results.registered_types`); the
    loading itself is :func:`fitaudit.results.load_result`.
    """
    from fitaudit.results import load_result as load

    return load(data)


def _notebook_page(result: Result) -> str:
    """An audit's page in a frame, for a notebook cell (its style sheet stays out of the notebook's)."""
    return str(render(result, "html", standalone=False))


NOTEBOOK_VIEWS["AuditResult"] = _notebook_page  # AuditResult._repr_html_ (results never import the report)


def load_audit(data: dict[str, Any], *, name: str = "audit") -> Any:
    """A saved audit (``audit.json``'s dictionary), validated, its verdicts decided again and worded.

    :func:`fitaudit.auditing.load_audit` (which decides) followed by
    :func:`fitaudit.report.verdicts.word_audit` (which words).
    """
    from fitaudit.auditing.result import load_audit as load
    from fitaudit.report.verdicts import word_audit

    return word_audit(load(data, name=name))


def renderers(result_type: str) -> list[str]:
    """Formats available for ``result_type``."""
    return [fmt for (name, fmt) in renderer_table() if name == result_type]


def render(result: Result | dict[str, Any], fmt: str = "markdown", **options: Any) -> Any:
    """Render a result (or its saved dict) in ``fmt`` through the renderer of its type (or of a base class).

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
    table = renderer_table()
    for cls in type(result).__mro__:
        renderer = table.get((cls.__name__, fmt))
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

    return write_page(result, path, render=render, json_digest=json_digest)


def save_audit(result: Any, out: Any) -> dict[str, Any]:
    """Write an audit's ``audit.json`` and ``report.html`` into the folder ``out`` as one unit; return their paths."""
    from fitaudit.report.audit import save_audit as save

    return save(result, out, render=render)


def save_reproduction(result: Any, folder: str | os.PathLike[str]) -> dict[str, str]:
    """Write a reproduction result's ``EXPERIMENT-MODE.json``, ``.md`` and ``.png`` into ``folder``; return their paths."""
    from fitaudit.report.reproductions import write_reproduction

    return write_reproduction(result, folder, render=render)
