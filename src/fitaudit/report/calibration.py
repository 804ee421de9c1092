"""The calibration check drawn (issue 48): its reliability diagram and the table of its bins.

Both are drawn from the result's own bins
(:meth:`fitaudit.calibration.result.CalibrationResult.reliability`: each
non-empty equal-width bin's range, count, mean confidence, accuracy and
exact interval), never recomputed here. The diagram is Guo et al.'s (2017,
"On calibration of modern neural networks", Sec. 2, Fig. 1): per bin of
confidence the accuracy, against the diagonal of perfect calibration (a bar
below it: overconfident there), with each bin's count written above its bar
and the counts again as a histogram below.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from fitaudit.report.html import esc, grid, number
from fitaudit.report.verdicts import read

#: what the reliability diagram shows, under it in the report
CAPTION = ("Reliability diagram: per bin of confidence, the share right (bars, with exact intervals) against the "
           "diagonal of perfect calibration; a bar below the diagonal is overconfident there. The number above "
           "each bar is the bin's count of rows, drawn again below.")


def reliability_figure(result: Any, **_: Any) -> Any:
    """The reliability diagram of a CalibrationResult (a matplotlib figure): accuracy per bin against the diagonal,
    the counts above the bars and, below, as a histogram."""
    from fitaudit.report.figures import new_figure

    rows = result.reliability()
    low = np.array([row["low"] for row in rows])
    width = np.array([row["high"] - row["low"] for row in rows])
    accuracy = np.array([row["accuracy"] for row in rows])
    confidence = np.array([row["confidence"] for row in rows])
    errors = np.array([[row["accuracy"] - row["accuracy_low"] for row in rows],
                       [row["accuracy_high"] - row["accuracy"] for row in rows]])
    counts = [row["count"] for row in rows]
    fig, (top, bottom) = new_figure(2, 1, figsize=(6.4, 6.0), sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    top.bar(low, accuracy, width=width, align="edge", color="#0969da", alpha=0.75, edgecolor="#ffffff",
            label="accuracy in the bin", gid="accuracy")
    top.errorbar(low + width / 2, accuracy, yerr=errors, fmt="none", ecolor="#1f2328", capsize=3)
    top.plot(confidence, accuracy, "o", color="#cf222e", markersize=4, label="at the bin's mean confidence",
             gid="confidence")
    top.plot([0, 1], [0, 1], linestyle="--", color="#59636e", linewidth=1, label="perfect calibration",
             gid="diagonal")
    for x, y, count in zip(low + width / 2, accuracy, counts):
        top.annotate(f"{count:,}", (x, y), textcoords="offset points", xytext=(0, 4), ha="center", fontsize=12)
    top.set_xlim(0, 1)
    top.set_ylim(0, 1.12)
    top.set_ylabel("accuracy")
    top.legend(loc="upper left", fontsize="small", frameon=False)
    top.grid(alpha=0.3)
    bottom.bar(low, counts, width=width, align="edge", color="#59636e", alpha=0.7, edgecolor="#ffffff", gid="counts")
    bottom.set_xlabel("confidence (largest probability)")
    bottom.set_ylabel("rows")
    bottom.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def calibration_html(result: Any, **_: Any) -> str:
    """The reading and the table of the bins (range, count, mean confidence, accuracy with its exact interval)."""
    level = f"{1 - result.level:.0%} interval (exact)"
    rows = [[esc(f"({row['low']:.3f}, {row['high']:.3f}]"), esc(number(row["count"])), esc(number(row["confidence"])),
             esc(number(row["accuracy"])), esc(f"{row['accuracy_low']:.3f}-{row['accuracy_high']:.3f}")]
            for row in result.reliability()]
    return (f"<p>{esc(read(result).sentence)}</p>"
            + grid(["confidence bin", "rows", "mean confidence", "accuracy", level], rows))


def calibration_markdown(result: Any, **_: Any) -> str:
    """The reading and the bins, one line each."""
    lines = [read(result).sentence, ""]
    lines += [f"- ({row['low']:.3f}, {row['high']:.3f}]: {row['count']:,} rows, mean confidence "
              f"{row['confidence']:.3f}, accuracy {row['accuracy']:.3f}" for row in result.reliability()]
    return "\n".join(lines)


RENDERERS: dict[tuple[str, str], Callable[..., Any]] = {
    ("CalibrationResult", "figure"): reliability_figure,
    ("CalibrationResult", "html"): calibration_html,
    ("CalibrationResult", "markdown"): calibration_markdown,
}
