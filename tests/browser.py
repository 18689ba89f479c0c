"""Open a report in headless Chromium: check that every chart was laid out and drew its data, and take
full-page screenshots. A test helper (the report itself needs no browser), also what made docs/report.png:
`PYTHONPATH=tests python -c "import browser; browser.screenshot('RUN/report.html', 'docs/report.png')"`.

The check renders a copy of the page with a small script appended that measures, for every
`<svg class="chart">`, its laid-out size and how many data marks (bars, cells, outlines, points: the
elements of class `d`) have a non-empty bounding box, and writes the result into the DOM that
`--dump-dom` prints.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ["--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars", "--disable-dev-shm-usage",
         "--no-first-run", "--disable-extensions"]
CHECK = """<script>(function () {
  var charts = [];
  document.querySelectorAll('svg.chart').forEach(function (svg, i) {
    var box = svg.getBoundingClientRect(), drawn = 0;
    svg.querySelectorAll('.d').forEach(function (e) { var b = e.getBBox(); if (b.width > 0 || b.height > 0) drawn++; });
    charts.push({index: i, label: svg.getAttribute('aria-label'), width: box.width, height: box.height, drawn: drawn});
  });
  var view = window.innerWidth, wide = [];
  function clipped(e) {  // inside a box that scrolls (or clips) sideways: it cannot widen the page
    for (var p = e.parentElement; p && p !== document.body; p = p.parentElement) {
      var o = getComputedStyle(p).overflowX;
      if (o === 'auto' || o === 'scroll' || o === 'hidden') return true;
    }
    return false;
  }
  document.querySelectorAll('body *').forEach(function (e) {
    var b = e.getBoundingClientRect();
    if (b.right > view + 1 && wide.length < 20 && !clipped(e))
      wide.push(e.tagName.toLowerCase() + (typeof e.className === 'string' && e.className ? '.' + e.className : '') + ' ' + Math.round(b.right));
  });
  var out = document.createElement('pre');
  out.id = 'render-check';
  out.textContent = JSON.stringify({charts: charts, height: document.documentElement.scrollHeight,
                                    scroll_width: document.documentElement.scrollWidth, viewport: view, overflowing: wide});
  document.body.appendChild(out);
  if (window.parent !== window) window.parent.postMessage(out.textContent, '*');
})();</script>"""
MIN_WINDOW = 500  # Chromium's headless windows are never narrower: a phone's width is shown in an iframe that wide
FRAME = """<!DOCTYPE html><html><body style="margin:0;background:#52606d">
<iframe src="{src}" style="display:block;width:{width}px;height:{height}px;border:0;background:#fff" scrolling="no"></iframe>
<pre id="render-check"></pre><script>window.addEventListener('message', function (e) {{
  document.getElementById('render-check').textContent = e.data; }});</script></body></html>"""


def _framed(page: Path, width: int, height: int) -> Path:
    """A page that shows `page` in an iframe `width` x `height` CSS pixels (its viewport: media queries, layout)."""
    wrapper = page.with_name(page.stem + f"-framed-{width}.html")
    wrapper.write_text(FRAME.format(src=page.name, width=width, height=height), encoding="utf-8")
    return wrapper


def find_chromium() -> str | None:
    """`$CURATE_CHROMIUM` (a path or a name; None when it names nothing runnable), else the first Chromium or
    Chrome on PATH."""
    if os.environ.get("CURATE_CHROMIUM"):
        return shutil.which(os.environ["CURATE_CHROMIUM"])
    return next((path for name in NAMES if (path := shutil.which(name))), None)


def _run(args: list[str], timeout: int) -> subprocess.CompletedProcess:
    binary = find_chromium()
    if binary is None:
        raise FileNotFoundError("no Chromium found (install Debian's chromium, or set CURATE_CHROMIUM)")
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([binary, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True,
                              timeout=timeout, check=False)


def dump_dom(html: str | Path, width: int = 1400, timeout: int = 120) -> str:
    """The DOM Chromium built from a local HTML file in a window `width` pixels wide, after its scripts ran."""
    done = _run([f"--window-size={width},1000", "--virtual-time-budget=10000", "--dump-dom", Path(html).resolve().as_uri()], timeout)
    if done.returncode != 0 or "<html" not in done.stdout:
        raise RuntimeError(f"chromium --dump-dom failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def render_check(html: str | Path, width: int = 1400, timeout: int = 120) -> dict:
    """{"charts": [{index, label, width, height, drawn}], "height": page height in CSS pixels, "scroll_width": the page's
    width (wider than "viewport": it scrolls sideways), "overflowing": elements reaching past the viewport outside any box
    that scrolls sideways (at most 20)}."""
    text = Path(html).read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.html"
        probe.write_text(text.replace("</body>", CHECK + "</body>"), encoding="utf-8")
        if width < MIN_WINDOW:
            probe = _framed(probe, width, 1000)
        dom = dump_dom(probe, max(width, MIN_WINDOW), timeout)
    found = re.search(r'<pre id="render-check">(.*?)</pre>', dom, re.S)
    if not found:
        raise RuntimeError("the render check did not run (no #render-check in the DOM)")
    return json.loads(found.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))


def screenshot(html: str | Path, png: str | Path, width: int = 1400, height: int | None = None, timeout: int = 120) -> Path:
    """A PNG of the page `width` CSS pixels wide; `height` None = the whole page. Below MIN_WINDOW the page is
    drawn in an iframe `width` wide at the left of a MIN_WINDOW-wide image (a grey band to its right)."""
    if height is None:
        height = int(render_check(html, width, timeout)["height"]) + 4
    png = Path(png).resolve()
    target = Path(html).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        if width < MIN_WINDOW:
            copy = Path(tmp) / target.name
            copy.write_bytes(target.read_bytes())
            target = _framed(copy, width, height)
        done = _run([f"--window-size={max(width, MIN_WINDOW)},{height}", f"--screenshot={png}", target.as_uri()], timeout)
    if done.returncode != 0 or not png.exists():
        raise RuntimeError(f"chromium --screenshot failed ({done.returncode}): {done.stderr[-2000:]}")
    return png
