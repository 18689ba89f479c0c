"""Open a report in headless Chromium: check that every chart was laid out and drew its data, and take
full-page screenshots. Used by the tests and to make docs/report.png; the report itself needs no browser.

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
  var out = document.createElement('pre');
  out.id = 'render-check';
  out.textContent = JSON.stringify({charts: charts, height: document.documentElement.scrollHeight});
  document.body.appendChild(out);
})();</script>"""


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
    """{"charts": [{index, label, width, height, drawn}], "height": page height in CSS pixels}."""
    text = Path(html).read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.html"
        probe.write_text(text.replace("</body>", CHECK + "</body>"), encoding="utf-8")
        dom = dump_dom(probe, width, timeout)
    found = re.search(r'<pre id="render-check">(.*?)</pre>', dom, re.S)
    if not found:
        raise RuntimeError("the render check did not run (no #render-check in the DOM)")
    return json.loads(found.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))


def screenshot(html: str | Path, png: str | Path, width: int = 1400, height: int | None = None, timeout: int = 120) -> Path:
    """A PNG of the page `width` CSS pixels wide; `height` None = the whole page."""
    if height is None:
        height = int(render_check(html, width, timeout)["height"]) + 4
    png = Path(png).resolve()
    done = _run([f"--window-size={width},{height}", f"--screenshot={png}", Path(html).resolve().as_uri()], timeout)
    if done.returncode != 0 or not png.exists():
        raise RuntimeError(f"chromium --screenshot failed ({done.returncode}): {done.stderr[-2000:]}")
    return png
