"""The audit report in a real browser: headless Chromium renders it offline, without errors, every image loaded.

Chromium runs with flags that keep it off the network and a fresh profile.
A small probe script is put into a copy of the page (the report itself runs
no script; its Content-Security-Policy forbids any request): it records
JavaScript errors, console errors, CSP violations, how many images loaded
and whether the page is wider than the window, as attributes of <html>,
which ``--dump-dom`` prints. Screenshots at laptop (1366x900) and phone
(390x844) widths are saved next to the page.
"""

from __future__ import annotations

import dataclasses
import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from sklearn.datasets import make_moons
from sklearn.tree import DecisionTreeClassifier

import fitaudit
from fitaudit.auditing.result import AuditResult
from fitaudit.data import GaussianMargin
from fitaudit.options import RunOptions
from fitaudit.overfit import LinearGradientAEG, train_logistic_models
from fitaudit.report import audit_page
from fitaudit.report.audit import audit_json_text
from fitaudit.report.badges import BADGES

#: this module's audits run without progress bars
QUIET = RunOptions(progress=False)

CHROMIUM = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome") if shutil.which(name)), None)

pytestmark = [pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (CI installs Debian's chromium)"), pytest.mark.slow]

#: keep the browser off the network, with no first-run work and a throw-away profile
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--disable-default-apps", "--hide-scrollbars", "--mute-audio"]

PROBE = """<script>
window.__errors = [];
window.addEventListener('error', function (e) {
  var t = e.target && e.target.tagName ? e.target.tagName + ' failed to load' : e.message;
  window.__errors.push('error: ' + t);
}, true);
document.addEventListener('securitypolicyviolation', function (e) {
  window.__errors.push('csp: ' + e.violatedDirective + ' ' + e.blockedURI);
});
var original = console.error;
console.error = function () { window.__errors.push('console: ' + Array.prototype.join.call(arguments, ' ')); original.apply(console, arguments); };
window.addEventListener('load', function () {
  var images = Array.prototype.slice.call(document.images);
  var broken = images.filter(function (i) { return !(i.complete && i.naturalWidth > 0); });
  var root = document.documentElement;
  root.setAttribute('data-images', images.length);
  root.setAttribute('data-broken', broken.length);
  root.setAttribute('data-errors', JSON.stringify(window.__errors));
  root.setAttribute('data-overflow', root.scrollWidth > window.innerWidth + 1 ? 'yes' : 'no');
  var tables = Array.prototype.slice.call(document.querySelectorAll('div.scroll:not(.plot)'));
  var clipped = tables.filter(function (t) { return t.scrollWidth > t.clientWidth + 1; });
  var unhinted = clipped.filter(function (t) {
    return (window.getComputedStyle(t, '::before').content || '').indexOf('swipe') < 0;
  });
  var hidden = tables.filter(function (t) {  // the verdict column (the second) cut off
    var verdict = t.querySelector('thead th:nth-child(2)');
    return verdict && verdict.getBoundingClientRect().right > t.getBoundingClientRect().right + 1;
  });
  root.setAttribute('data-verdict-hidden', hidden.length);
  var facts = tables.filter(function (t) {  // the leakage table: a row named 'threshold'
    return Array.prototype.some.call(t.querySelectorAll('td:first-child'), function (c) { return c.textContent === 'threshold'; });
  });
  root.setAttribute('data-facts', facts.length);
  root.setAttribute('data-facts-clipped', facts.filter(function (t) { return t.scrollWidth > t.clientWidth + 1; }).length);
  var hinted = tables.filter(function (t) { return facts.indexOf(t) < 0; });
  root.setAttribute('data-hint', hinted.length ? window.getComputedStyle(hinted[0], '::before').content : '');
  root.setAttribute('data-unhinted', unhinted.length);
  var badge = function (p) {  // a status badge: its status class, its text and its colour as the browser drew it
    var style = window.getComputedStyle(p);
    return [p.className.replace('pill', '').trim(), p.textContent, style.backgroundColor, style.color];
  };
  root.setAttribute('data-chips', JSON.stringify(Array.prototype.map.call(document.querySelectorAll('.headline .pill'), badge)));
  root.setAttribute('data-cards', JSON.stringify(Array.prototype.map.call(document.querySelectorAll('article.card'),
    function (c) { return [c.id.replace('card-', '')].concat(badge(c.querySelector('.pill'))); })));
  var plots = Array.prototype.slice.call(document.querySelectorAll('.scroll.plot img'));
  root.setAttribute('data-plot-width', Math.min.apply(null, plots.map(function (i) { return i.clientWidth; })));
});
</script>"""


def _browser(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()],
                          capture_output=True, text=True, timeout=120)


def _probed_copy(report: Path, target: Path) -> Path:
    """The report with the probe at the top of <head>; its CSP still forbids any request, now allows inline script."""
    text = report.read_text()
    text = text.replace("style-src 'unsafe-inline'", "style-src 'unsafe-inline'; script-src 'unsafe-inline'", 1)
    target.write_text(text.replace("<head>", "<head>" + PROBE, 1))
    return target


class _Known(AuditResult):
    """An audit that knows its answers (as the demo's DemoResult): every part's, found."""

    def known_answers(self):
        return {p.id: {"text": "its own verdict", "met": True} for p in self.parts if p.status != "skipped"}


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """A real audit with both figure kinds (the overfitting test side by side and PMV), knowing its answers
    as the demo does, with its audit.json beside the page."""
    out = tmp_path_factory.mktemp("browser-report")
    dist = GaussianMargin(d=30)
    x, y = dist.sample(400, random_state=0)
    model = train_logistic_models(x[:200], y[:200], steps=300, first_coordinate_penalty=1e4, random_state=0)[0]
    overfit = fitaudit.audit(model, (x, y), train_data=(x[:200], y[:200]), aeg=LinearGradientAEG(5.0, dist),
                             instruments=["overfit"], options=QUIET)
    xm, ym = make_moons(150, noise=0.3, random_state=0)
    result = fitaudit.audit(DecisionTreeClassifier(max_depth=3, random_state=0).fit(xm, ym), (xm, ym),
                            train_data=(xm, ym), options=QUIET)
    result.parts = overfit.parts + [p for p in result.parts if p.instrument != "overfit"]
    known = _Known(**{field.name: getattr(result, field.name) for field in dataclasses.fields(result)})
    (out / "audit.json").write_text(audit_json_text(known))
    audit_page(known, out / "report.html")
    return out / "report.html"


def _rgb(colour: str) -> str:
    """``"#1a7f37"`` as the browser writes a computed colour, ``"rgb(26, 127, 55)"``."""
    return "rgb({}, {}, {})".format(*(int(colour[i:i + 2], 16) for i in (1, 3, 5)))


@pytest.mark.parametrize("width,height", [(1366, 900), (390, 844)])
def test_report_renders_offline_without_errors_and_every_image_loads(report, tmp_path, width, height):
    page = _probed_copy(report, tmp_path / "probed.html")
    run = _browser(page, tmp_path / "profile", f"--window-size={width},{height}", "--virtual-time-budget=5000",
                   "--enable-logging=stderr", "--v=0", "--dump-dom")
    assert run.returncode == 0, run.stderr[-2000:]
    root = re.search(r"<html[^>]*>", run.stdout)
    assert root is not None, run.stdout[:500]
    attributes = dict(re.findall(r'(data-[a-z-]+)="([^"]*)"', root.group(0)))
    assert int(attributes["data-images"]) >= 2  # the interval plot and the PMV curve
    assert attributes["data-broken"] == "0"
    assert json.loads(attributes["data-errors"].replace("&quot;", '"')) == []
    assert attributes["data-overflow"] == "no", "the page is wider than the window"
    # a table wider than the window scrolls sideways and says so; on a laptop none is cut
    assert attributes["data-unhinted"] == "0"
    if width >= 700:  # on a phone a wide table scrolls (hinted, above); on a laptop its verdict column shows
        assert attributes["data-verdict-hidden"] == "0", "a table's verdict column is cut off"
    # the leakage table of names and values wraps its cells (its threshold reads whole) instead of scrolling
    assert int(attributes["data-facts"]) >= 1
    assert attributes["data-facts-clipped"] == "0", "the leakage table is cut off"
    # the phone's hint above a wide table: the left-right arrow U+2194, no control character
    hint = html.unescape(attributes["data-hint"])
    if width < 700:
        assert hint.startswith('"\u2194 swipe'), hint
    assert not any(ord(c) < 32 for c in hint), hint
    # plots keep a width at which their labels (at least 12 pt at 110 dpi) read at about 14 px
    assert int(float(attributes["data-plot-width"])) >= (590 if width < 700 else 300)
    console = [line for line in run.stderr.splitlines() if "CONSOLE" in line and "ERROR" in line.upper()]
    assert console == []
    # the badges as drawn are the audit.json's statuses, in their colours and words; the chips count them
    statuses = [p["verdict"]["status"] for p in json.loads((report.parent / "audit.json").read_text())["parts"]]
    cards = json.loads(html.unescape(attributes["data-cards"]))  # one per part that ran, in the parts' order
    assert [status for _, status, *_ in cards] == [s for s in statuses if s != "skipped"]
    assert len(set(statuses) - {"skipped"}) >= 3  # a page of several statuses
    for _, status, word, background, colour in cards:
        assert (word, background, colour) == (BADGES[status].word, _rgb(BADGES[status].background),
                                              _rgb(BADGES[status].colour))
    chips = {status: int(text.split()[0]) for status, text, *_ in json.loads(html.unescape(attributes["data-chips"]))}
    assert chips == {s: statuses.count(s) for s in set(statuses)}


@pytest.mark.parametrize("width,height", [(1366, 900), (390, 844)])
def test_screenshots_at_laptop_and_phone_width(report, tmp_path, width, height):
    shot = tmp_path / f"report-{width}x{height}.png"
    run = _browser(report, tmp_path / "profile", f"--window-size={width},{height}", f"--screenshot={shot}")
    assert run.returncode == 0 and shot.is_file(), run.stderr[-2000:]
    from PIL import Image

    with Image.open(shot) as image:
        assert image.size == (width, height)
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50  # a drawn page, not a blank one
