"""Building blocks of the self-contained HTML report.

One file, nothing fetched: the style sheet is inline, every picture is a
``data:`` URI (PNG from matplotlib figures, or an array of pixels), and a
Content-Security-Policy in the page forbids any network request, so the
report opens offline and cannot call home. The layout is one responsive
column: a summary of verdicts first, then the evidence; it reads on a laptop
and on a phone-width screen.
"""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from fitaudit.report.badges import badge, badge_css
from fitaudit.report.numbers import pvalue

__all__ = ["esc", "figure_html", "figure_uri", "grid", "image_uri", "key_values", "number", "page",
           "pill", "pvalue"]

#: no network, no plugins: only inline style and data: images
CONTENT_SECURITY_POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

#: raw, so that a CSS escape such as ``\2194`` reaches the page as written (in a plain string ``\21`` is a
#: control character)
STYLE = r"""
:root { --ink:#1f2328; --muted:#59636e; --line:#d1d9e0; --bg:#f6f8fa; --card:#ffffff; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; background: var(--bg); color: var(--ink); line-height: 1.5;
  font: 15px/1.5 -apple-system, "Segoe UI", "Helvetica Neue", Arial, "DejaVu Sans", sans-serif; }
main { max-width: 1040px; margin: 0 auto; padding: 24px 20px 48px; }
header.top { margin-bottom: 20px; }
header.top h1 { font-size: 1.65rem; margin: 0 0 4px; line-height: 1.25; }
header.top .sub { color: var(--muted); font-size: .92rem; }
h2 { font-size: 1.25rem; margin: 36px 0 12px; padding-bottom: 6px; border-bottom: 1px solid var(--line); }
h3 { font-size: 1.05rem; margin: 0 0 6px; }
h4 { font-size: .95rem; margin: 16px 0 6px; color: var(--muted); }
p { margin: 6px 0; }
.headline { display: flex; flex-wrap: wrap; gap: 8px; margin: 14px 0 4px; }
.pill { display: inline-block; border-radius: 999px; padding: 2px 12px; font-weight: 600; font-size: .85rem; }
.answer { display: inline-block; border-radius: 6px; padding: 1px 8px; font-weight: 600; font-size: .78rem;
  margin-left: 6px; letter-spacing: normal; text-transform: none; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(300px, 1fr)); gap: 14px; }
.card { background: var(--card); border: 1px solid var(--line); border-left: 5px solid var(--skipped);
  border-radius: 8px; padding: 14px 16px; min-width: 0; }
.card.skipped { opacity: .85; }
.card .instrument { font-size: .75rem; letter-spacing: .06em; text-transform: uppercase; color: var(--muted); }
.card .verdict { font-size: .93rem; }
.card .expected { font-size: .85rem; margin-top: 8px; padding: 4px 8px; border-radius: 6px; background: var(--bg); }
.card .expected.met::before { content: "\2713  "; color: var(--pass); font-weight: 700; }
.card .expected.unmet::before { content: "\2717  "; color: var(--fail); font-weight: 700; }
.kv { width: 100%; border-collapse: collapse; margin-top: 8px; font-size: .86rem; }
.kv th { text-align: left; font-weight: 400; color: var(--muted); padding: 2px 8px 2px 0; vertical-align: top; }
.kv td { text-align: right; font-variant-numeric: tabular-nums; padding: 2px 0; white-space: nowrap; }
.panel { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 16px;
  margin-bottom: 16px; min-width: 0; }
.scroll { overflow-x: auto; -webkit-overflow-scrolling: touch;
  /* shadows at an edge with more to see: scroll sideways */
  background: linear-gradient(to right, var(--card) 30%, rgba(255,255,255,0)) left / 24px 100% no-repeat local,
    linear-gradient(to left, var(--card) 30%, rgba(255,255,255,0)) right / 24px 100% no-repeat local,
    radial-gradient(farthest-side at 0 50%, rgba(0,0,0,.18), rgba(0,0,0,0)) left / 10px 100% no-repeat scroll,
    radial-gradient(farthest-side at 100% 50%, rgba(0,0,0,.18), rgba(0,0,0,0)) right / 10px 100% no-repeat scroll; }
.scroll.plot { background: none; }
table.grid { border-collapse: collapse; font-size: .88rem; width: 100%; }
table.grid th, table.grid td { border-bottom: 1px solid var(--line); padding: 6px 8px; text-align: right;
  font-variant-numeric: tabular-nums; white-space: nowrap; }
table.grid thead th { white-space: normal; vertical-align: bottom; min-width: 4.5em; }
table.grid th:first-child, table.grid td:first-child { text-align: left; white-space: normal; min-width: 11em; }
table.grid thead th { background: var(--bg); font-weight: 600; }
table.grid td .wrap { white-space: normal; overflow-wrap: anywhere; display: inline-block; min-width: 10em; text-align: left; }
/* a table of names and long values (grid(..., facts=True)): the values wrap, so it fits a phone's width */
div.scroll.facts table.grid td { white-space: normal; overflow-wrap: anywhere; text-align: left; }
.fragment table { border-collapse: collapse; font-size: .86rem; margin: 8px 0; }
.fragment th, .fragment td { padding: 4px 8px; border-bottom: 1px solid var(--line); text-align: right;
  font-variant-numeric: tabular-nums; white-space: nowrap; }
.fragment th:nth-child(-n+2), .fragment td:nth-child(-n+2) { text-align: left; }
.fragment thead th, .fragment tr:first-child th { background: var(--bg); }
figure { margin: 12px 0; }
figure img { display: block; max-width: 100%; height: auto; margin: 0 auto; }
figcaption { color: var(--muted); font-size: .85rem; margin-top: 4px; text-align: center; }
.gallery { display: grid; grid-template-columns: repeat(auto-fill, minmax(96px, 1fr)); gap: 8px; }
.gallery figure { margin: 0; }
.gallery img { width: 100%; image-rendering: pixelated; border-radius: 4px; border: 1px solid var(--line); }
.gallery figcaption { font-size: .72rem; text-align: left; line-height: 1.3; }
.note { font-size: .85rem; color: var(--muted); }
.warn { font-size: .85rem; background: #fff8c5; border: 1px solid #eac54f; border-radius: 6px; padding: 6px 10px; margin: 8px 0; }
details { margin: 8px 0; }
summary { cursor: pointer; color: var(--info); font-size: .9rem; }
code, pre { font-family: ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", Menlo, monospace; font-size: .82rem; }
pre { white-space: pre-wrap; word-break: break-word; background: var(--bg); padding: 8px; border-radius: 6px; }
code { overflow-wrap: anywhere; }
h3.notrun { margin: 18px 0 8px; color: var(--muted); }
ul.notrun { margin: 0; padding-left: 1.2em; font-size: .9rem; color: var(--muted); }
ul.notrun li { margin: 3px 0; }
footer { margin-top: 36px; color: var(--muted); font-size: .8rem; }
@media (max-width: 700px) {
  div.scroll:not(.plot):not(.facts)::before { content: "\2194  swipe sideways to see every column"; display: block;
    position: sticky; left: 0; font-size: .75rem; color: var(--muted); margin-bottom: 2px; }
  figure .scroll.plot img { max-width: none; width: 600px; }
}
@media (max-width: 600px) {
  main { padding: 14px 12px 32px; }
  header.top h1 { font-size: 1.3rem; }
  h2 { font-size: 1.1rem; margin-top: 28px; }
  .cards { grid-template-columns: 1fr; }
  .panel { padding: 12px; }
  table.grid th, table.grid td { padding: 5px 6px; }
}
"""


def esc(value: Any) -> str:
    """HTML-escaped text."""
    return html.escape(str(value), quote=True)


def md_cell(value: Any) -> str:
    """Text for a markdown table cell: ``|`` would end the cell and ``<...>`` would be raw HTML, so both are
    escaped (a backslash too); a line break becomes a space."""
    text = " ".join(str(value).splitlines())
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def number(value: Any, digits: int = 3) -> str:
    """A number for people: p-values in 2 significant digits, others at ``digits`` decimals."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if not math.isfinite(v):
            return "n/a"
        if abs(v) >= 1e6:
            return f"{v:.3g}"
        text = f"{v:.{digits}f}"
        return text[1:] if text.startswith("-") and float(text) == 0 else text
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value):
        return f"[{number(value[0], digits)}, {number(value[1], digits)}]"
    return str(value)


def key_values(pairs: Iterable[tuple[str, Any]]) -> str:
    """A two-column table of names and formatted values."""
    rows = []
    for name, value in pairs:
        text = pvalue(value) if "p-value" in name.lower() or name.lower().startswith("p_") else number(value)
        rows.append(f"<tr><th>{esc(name)}</th><td>{esc(text)}</td></tr>")
    return f"<table class='kv'>{''.join(rows)}</table>"


def grid(header: Sequence[str], rows: Iterable[Sequence[Any]], *, facts: bool = False) -> str:
    """A data table (cells are HTML already; pass text through :func:`esc`).

    ``facts=True``: a table of names and values in sentences (the leakage
    table's threshold, say): its cells wrap, so on a phone it fits the width
    instead of scrolling sideways.
    """
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    kind = "scroll facts" if facts else "scroll"
    return f"<div class='{kind}'><table class='grid'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


#: smallest text in the report's figures, in points: on a phone (an image about 600 px wide, see STYLE)
#: that is about 14 px
MIN_FONT_PT = 12.0


def legible(figure: Any, minimum: float = MIN_FONT_PT) -> None:
    """Raise every text of ``figure`` (labels, ticks, legends, titles) to at least ``minimum`` points."""
    from matplotlib.text import Text

    for ax in figure.axes:  # tick labels are made again at drawing time, from the axis' setting
        for axis in (ax.xaxis, ax.yaxis):
            labels = axis.get_ticklabels()
            axis.set_tick_params(labelsize=max(minimum, labels[0].get_fontsize() if labels else minimum))
    for text in figure.findobj(Text):
        if text.get_fontsize() < minimum:
            text.set_fontsize(minimum)


def figure_uri(figure: Any, *, dpi: int = 110) -> str:
    """A matplotlib figure as a ``data:image/png;base64`` URI, its text made :func:`legible` (the figure is closed)."""
    import matplotlib.pyplot as plt

    legible(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(figure)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def image_uri(pixels: Any) -> str:
    """An image array (C, H, W) or (H, W, C) in [0, 1] as a PNG ``data:`` URI."""
    from PIL import Image

    array = np.asarray(pixels, dtype=np.float64)
    if array.ndim == 3 and array.shape[0] in (1, 3) and array.shape[-1] not in (1, 3):
        array = np.transpose(array, (1, 2, 0))
    if array.ndim == 3 and array.shape[-1] == 1:
        array = array[..., 0]
    data = np.clip(np.round(array * 255), 0, 255).astype(np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(data).save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def figure_html(uri: str, caption: str, *, alt: str | None = None) -> str:
    """``<figure>`` with an embedded image and a caption (on a phone the image keeps a legible width and scrolls)."""
    return (f"<figure><div class='scroll plot'><img src='{uri}' alt='{esc(alt or caption)}'></div>"
            f"<figcaption>{esc(caption)}</figcaption></figure>")


def pill(status: str, label: str | None = None) -> str:
    """A status's badge (:func:`fitaudit.report.badges.badge`): its colour, and its word unless ``label`` is given."""
    return f"<span class='pill {esc(status)}'>{esc(label or badge(status).word)}</span>"


def page(title: str, body: str) -> str:
    """A complete, self-contained HTML document."""
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"{CONTENT_SECURITY_POLICY}\">"
        f"<title>{esc(title)}</title><style>{STYLE}{badge_css()}</style></head>"
        f"<body><main>{body}</main></body></html>\n"
    )
