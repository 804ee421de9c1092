"""The calibration part's reliability diagram (issue 48 item 3): drawn from the result's own bins, in the report.

The figure's bars, points, interval bars and counts are read back from the
matplotlib figure and compared with the result's bins
(:meth:`fitaudit.calibration.result.CalibrationResult.reliability`), and
with a count made here from the probabilities; the audit page of a
calibration part carries the figure and the table of its bins.
"""

from __future__ import annotations

import html

import numpy as np
import pytest
from matplotlib.container import ErrorbarContainer

from fitaudit.auditing.parts import part_from_result
from fitaudit.auditing.result import AuditResult
from fitaudit.calibration import calibration_check
from fitaudit.report import audit_page, render
from fitaudit.report.calibration import CAPTION


@pytest.fixture(scope="module")
def overconfident():
    """Labels right with probability p - 0.1 where the model says p (in [0.55, 1]): overconfident."""
    rng = np.random.default_rng(0)
    p = rng.uniform(0.55, 1.0, 600)
    y = np.where(rng.random(600) < p - 0.1, 1, 0)
    return calibration_check(y, np.column_stack([1 - p, p]), n_boot=200, random_state=0), p, y


def _by_gid(ax, gid):
    return [artist for artist in ax.get_children() if artist.get_gid() == gid]


@pytest.mark.slow
def test_the_diagram_plots_the_result_bins(overconfident):
    result, p, y = overconfident
    rows = result.reliability()
    filled = np.flatnonzero(result.bin_count)
    # the bins, counted here from the probabilities (equal-width, right-closed): the result's own
    edges = np.linspace(0, 1, result.n_bins + 1)
    counted = np.histogram(p, bins=edges)[0]
    assert [row["count"] for row in rows] == counted[counted > 0].tolist() == result.bin_count[filled].tolist()
    figure = render(result, "figure")
    top, bottom = figure.axes
    bars = [patch for patch in top.patches if patch.get_gid() == "accuracy"]
    assert [bar.get_height() for bar in bars] == pytest.approx(result.bin_accuracy[filled].tolist())
    assert [bar.get_x() for bar in bars] == pytest.approx((filled / result.n_bins).tolist())
    assert [bar.get_width() for bar in bars] == pytest.approx([1 / result.n_bins] * len(filled))
    (points,) = _by_gid(top, "confidence")
    assert points.get_xdata().tolist() == pytest.approx(result.bin_confidence[filled].tolist())
    assert points.get_ydata().tolist() == pytest.approx(result.bin_accuracy[filled].tolist())
    (diagonal,) = _by_gid(top, "diagonal")
    assert list(diagonal.get_xdata()) == list(diagonal.get_ydata()) == [0, 1]
    # the exact interval of each bin, as the result gives it
    (interval,) = [c for c in top.containers if isinstance(c, ErrorbarContainer)]
    segments = interval.lines[2][0].get_segments()
    assert np.allclose([(s[0][1], s[1][1]) for s in segments],
                       [(row["accuracy_low"], row["accuracy_high"]) for row in rows])
    # the counts above the bars and as the histogram below
    assert [text.get_text() for text in top.texts] == [f"{row['count']:,}" for row in rows]
    counts = [patch for patch in bottom.patches if patch.get_gid() == "counts"]
    assert [bar.get_height() for bar in counts] == [row["count"] for row in rows]


@pytest.mark.slow
def test_the_audit_page_shows_the_diagram_and_the_bins(overconfident):
    result, _, _ = overconfident
    part = part_from_result("calibration", "first", "Are the model's probabilities right?", result)
    audit = AuditResult(title="t", subject={}, parts=[part], settings={}, environment={}, random_state=0,
                        seconds=0.0, created="now")
    page = audit_page(audit)
    assert f"<figcaption>{html.escape(CAPTION)}</figcaption>" in page
    figure = page.split(f"<figcaption>{html.escape(CAPTION)}")[0].rsplit("<figure>", 1)[1]
    assert "<img src='data:image/png;base64," in figure
    for row in result.reliability():  # the table of the bins beside it
        assert f"<td>{row['count']:,}</td><td>{row['confidence']:.3f}</td><td>{row['accuracy']:.3f}</td>" in page
