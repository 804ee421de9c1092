"""Renderers of the PGDL harness's results (measures ranked on tasks).

``Leaderboard`` and ``TaskScores``: ``"markdown"`` and ``"html"`` give a
sentence naming the best measure and a table with the four metrics and the
time per model; ``"figure"`` draws the official score, Kendall's tau and
Psi per measure as bars. ``MeasureScore``: a sentence and its numbers.
:func:`save_leaderboard` writes the JSON, markdown and PNG of a leaderboard.

Reading the numbers: the official score is the competition's (100 x the
conditional MI, minimum over pairs of hyperparameters; the published
winners scored 22.92, 13.93 and 9.99 on its private tasks); Kendall's tau
and Psi are in [-1, 1] and, unlike the CMI, negative when the measure ranks
the models backwards.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from fitaudit.checkpoint import atomic_write_text
from fitaudit.report.figures import new_figure, save_figure
from fitaudit.report.html import md_cell
from fitaudit.report.numbers import fixed as _fmt
from fitaudit.report.verdicts import read


def _flags(row: dict[str, Any]) -> str:
    flags = []
    if row.get("over_budget"):
        flags.append("over budget")
    if row.get("n_errors"):
        flags.append(f"{row['n_errors']} errors")
    return ", ".join(flags)


def _board_rows(board: Any) -> tuple[list[str], list[list[str]]]:
    many = len(board.tasks) > 1
    header = ["#", "measure", "family", "score (100 x CMI)"]
    if many:
        header.append("CMI per task")
    header += ["Kendall tau", "Psi", "general CMI", "s / model", "flags"]
    rows = []
    for rank, row in enumerate(board.rows, start=1):
        cells = [str(rank), row["measure"], row["family"], _fmt(row["final_score"], 2)]
        if many:
            cells.append(" / ".join(_fmt(v) for v in row["official_cmi"]))
        cells += [_fmt(row["kendall"]), _fmt(row["psi"]), _fmt(row["general_cmi"]),
                  _fmt(row["seconds_per_model"], 2), _flags(row)]
        rows.append(cells)
    return header, rows


def _markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _notes(board: Any) -> list[str]:
    return [f"{r['measure']}: {r['note']}" for r in board.rows if r["note"]]


def _board_markdown(board: Any, reading: str) -> str:
    header, rows = _board_rows(board)
    tasks = "\n".join(f"- task {i + 1}: {md_cell(t)}" for i, t in enumerate(board.tasks))
    notes = "\n".join(f"- {n}" for n in _notes(board))
    return "\n\n".join(part for part in (reading, tasks, _markdown_table(header, rows), notes) if part)


def _board_html(board: Any, reading: str) -> str:
    header, rows = _board_rows(board)
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in _notes(board))
    return f"<p>{html.escape(reading)}</p>{_html_table(header, rows)}" + (f"<ul>{notes}</ul>" if notes else "")


def leaderboard_markdown(board: Any, **_: Any) -> str:
    """The reading, the ranked table and the notes."""
    return _board_markdown(board, read(board).sentence)


def leaderboard_html(board: Any, **_: Any) -> str:
    """HTML form of :func:`leaderboard_markdown`."""
    return _board_html(board, read(board).sentence)


def _bars(rows: list[dict[str, Any]], title: str) -> Any:
    names = [r["measure"] for r in rows]
    columns = [
        ("score (100 x official CMI)", [r["final_score"] for r in rows]),
        ("Kendall tau", [r["kendall"] for r in rows]),
        ("Psi (granulated Kendall)", [r["psi"] for r in rows]),
    ]
    fig, axes = new_figure(1, 3, figsize=(13, 0.28 * len(names) + 1.6), sharey=True)
    y = np.arange(len(names))
    for ax, (label, values) in zip(axes, columns):
        numbers = np.array([np.nan if v is None else v for v in values], dtype=float)
        colours = ["tab:red" if r["over_budget"] else ("tab:green" if r["family"] == "baseline" else "tab:blue") for r in rows]
        ax.barh(y, np.nan_to_num(numbers), color=colours)
        for i in np.flatnonzero(np.isnan(numbers)):
            ax.text(0, i, " n/a", va="center", fontsize=7)
        ax.axvline(0, color="black", linewidth=0.6)
        ax.set_title(label, fontsize=9)
        ax.tick_params(labelsize=7)
    axes[0].set_yticks(y, names)
    axes[0].invert_yaxis()
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def leaderboard_figure(board: Any, **_: Any) -> Any:
    """Bars per measure: the competition's score, Kendall's tau and Psi (baselines green, over budget red)."""
    return _bars(board.rows, f"PGDL leaderboard on {len(board.tasks)} task(s) (green: baselines; red: over budget)")


def _task_rows(result: Any) -> list[dict[str, Any]]:
    rows = [
        {
            "measure": s.measure,
            "family": "",
            "final_score": None if s.official_score is None else 100.0 * s.official_score,
            "official_cmi": [s.official_cmi],
            "kendall": s.kendall,
            "psi": s.psi,
            "general_cmi": s.general_cmi,
            "seconds_per_model": s.seconds_per_model,
            "over_budget": s.over_budget,
            "n_errors": len(s.errors),
            "note": s.note,
        }
        for s in result.scores
    ]
    rows.sort(key=lambda r: (r["final_score"] is None, -(r["final_score"] or 0.0)))
    return rows


class _Board:
    """A TaskScores seen as a one-task leaderboard (for the shared table code)."""

    def __init__(self, result: Any) -> None:
        self.tasks = [result.task]
        self.rows = _task_rows(result)


def task_scores_markdown(result: Any, **_: Any) -> str:
    """The measures of one task, ranked, with the four metrics."""
    return _board_markdown(_Board(result), read(result).sentence)


def task_scores_html(result: Any, **_: Any) -> str:
    """HTML form of :func:`task_scores_markdown`."""
    return _board_html(_Board(result), read(result).sentence)


def task_scores_figure(result: Any, **_: Any) -> Any:
    """Bars per measure on one task."""
    return _bars(_task_rows(result), f"measures on {result.task} ({result.n_models} models)")


def measure_score_markdown(score: Any, **_: Any) -> str:
    """The sentence and per-hyperparameter psi."""
    lines = [read(score).sentence]
    if score.psi_per_hparam:
        lines += ["", "| hyperparameter | psi |", "|---|---|"]
        lines += [f"| {md_cell(name)} | {_fmt(v)} |" for name, v in score.psi_per_hparam.items()]
    if score.note:
        lines += ["", f"> {score.note}"]
    return "\n".join(lines)


def save_leaderboard(board: Any, out: Any, *, stem: str = "leaderboard") -> dict[str, Path]:
    """Write ``STEM.json``, ``STEM.md`` and ``STEM.png`` of a leaderboard into ``out``; return the paths."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"json": folder / f"{stem}.json", "markdown": folder / f"{stem}.md", "figure": folder / f"{stem}.png"}
    atomic_write_text(paths["json"], json.dumps(board.to_dict(), indent=1) + "\n")
    atomic_write_text(paths["markdown"], leaderboard_markdown(board) + "\n")
    save_figure(leaderboard_figure(board), paths["figure"])
    return paths


#: this module's renderers by (result type, format), gathered by :func:`fitaudit.report.renderer_table`
RENDERERS: dict[tuple[str, str], Callable[..., Any]] = {
    ("Leaderboard", "markdown"): leaderboard_markdown,
    ("Leaderboard", "html"): leaderboard_html,
    ("Leaderboard", "figure"): leaderboard_figure,
    ("TaskScores", "markdown"): task_scores_markdown,
    ("TaskScores", "html"): task_scores_html,
    ("TaskScores", "figure"): task_scores_figure,
    ("MeasureScore", "markdown"): measure_score_markdown,
}
