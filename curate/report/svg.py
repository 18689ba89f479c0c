"""Chart primitives that draw inline SVG: histogram, bars (grouped or stacked), heatmap, lines.

No library and no script: every chart is a self-contained `<svg class="chart">` string that scales to
its container (a viewBox). Hovering a bar, cell or point shows its exact value (an SVG `<title>`).
Axes get "nice" ticks (1, 2, 5 x 10^k) on linear scales and powers of ten on log scales.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape

FONT = "system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif"
INK, MUTED, GRID, THRESHOLD = "#1f2933", "#616e7c", "#e4e7eb", "#1f2933"
CHAR_W = 0.58  # average glyph width / font size, to size margins for labels


@dataclass
class Series:
    label: str
    color: str
    values: list            # one value per bin / category / x (None: no value)
    dashed: list = field(default_factory=list)  # lines: per-point flags (True = an estimate), drawn dashed


@dataclass(frozen=True)
class Mark:
    """A reference line at `value` on the value axis of a chart (a threshold, 1 epoch, ...)."""

    value: float
    label: str


# ---- numbers -------------------------------------------------------------------------------------

def compact(v, digits: int = 3) -> str:
    """12, 1.2k, 3.45M, 1.2B: short numbers for ticks and bar labels."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    a = abs(v)
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if a >= scale:
            return f"{_trim(v / scale, digits)}{suffix}"
    if a >= 1 or a == 0:
        return _trim(v, digits)
    return f"{v:.{digits}g}"


def _trim(v: float, digits: int) -> str:
    text = f"{v:.{max(0, digits - 1 - int(math.floor(math.log10(abs(v)))) if v else 0)}f}" if v else "0"
    return text.rstrip("0").rstrip(".") if "." in text else text


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / max(1, count)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    ticks, t = [], first
    while t <= hi + step * 1e-9:
        ticks.append(round(t, 12))
        t += step
    return ticks


def log_ticks(lo: float, hi: float) -> list[float]:
    """Powers of ten in [lo, hi] (lo > 0); with 2 and 5 between them when the range is under two decades."""
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    mults = (1, 2, 5) if b - a <= 2 else (1,)
    return [m * 10 ** e for e in range(a, b + 1) for m in mults if lo * (1 - 1e-9) <= m * 10 ** e <= hi * (1 + 1e-9)]


class Scale:
    """Maps data values to pixels, linearly or in log10."""

    def __init__(self, lo: float, hi: float, a: float, b: float, log: bool = False):
        self.log = log
        if log:
            lo, hi = max(lo, 1e-12), max(hi, lo * 10)
        if hi <= lo:
            hi = lo + 1
        self.lo, self.hi, self.a, self.b = lo, hi, a, b

    def __call__(self, v: float) -> float:
        if self.log:
            t = (math.log10(max(v, self.lo)) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        else:
            t = (v - self.lo) / (self.hi - self.lo)
        return self.a + t * (self.b - self.a)

    def ticks(self) -> list[float]:
        return log_ticks(self.lo, self.hi) if self.log else nice_ticks(self.lo, self.hi)


# ---- SVG pieces ----------------------------------------------------------------------------------

def _svg(width: int, height: int, body: list[str], label: str) -> str:
    return (f'<svg class="chart" viewBox="0 0 {width} {height}" '
            f'width="{width}" height="{height}" role="img" aria-label="{escape(label)}" '
            f'style="font-family:{FONT};max-width:100%;height:auto">' + "".join(body) + "</svg>")


def _text(x, y, s, size=11, anchor="start", color=INK, weight="normal", rotate=None, baseline="auto") -> str:
    transform = f' transform="rotate({rotate} {x:.1f} {y:.1f})"' if rotate else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" fill="{color}" text-anchor="{anchor}" '
            f'font-weight="{weight}" dominant-baseline="{baseline}"{transform}>{escape(str(s))}</text>')


def _rect(x, y, w, h, color, tip: str, opacity: float = 1.0, stroke: str | None = None) -> str:
    extra = f' stroke="{stroke}" stroke-width="1"' if stroke else ""
    return (f'<rect class="d" x="{x:.2f}" y="{y:.2f}" width="{max(w, 0):.2f}" height="{max(h, 0):.2f}" fill="{color}" '
            f'fill-opacity="{opacity}"{extra}><title>{escape(tip)}</title></rect>')


def _line(x1, y1, x2, y2, color=GRID, width=1.0, dash: str | None = None) -> str:
    d = f' stroke-dasharray="{dash}"' if dash else ""
    return f'<line x1="{x1:.2f}" y1="{y1:.2f}" x2="{x2:.2f}" y2="{y2:.2f}" stroke="{color}" stroke-width="{width}"{d}/>'


def _legend(items: list[tuple[str, str]], x: float, y: float, width: float) -> tuple[list[str], float]:
    """Swatches and labels in rows from (x, y) within `width`; returns the elements and the height used."""
    out, cx, cy = [], x, y
    for label, color in items:
        w = 16 + len(label) * 11 * CHAR_W + 14
        if cx + w > x + width and cx > x:
            cx, cy = x, cy + 16
        out.append(f'<rect x="{cx:.1f}" y="{cy:.1f}" width="10" height="10" rx="2" fill="{color}"/>')
        out.append(_text(cx + 14, cy + 9, label, size=11, color=INK))
        cx += w
    return out, (cy - y + 16 if items else 0)


def _value_axis_h(scale: Scale, top: float, bottom: float, left: float, right: float, fmt, label: str) -> list[str]:
    """Vertical value axis (ticks on the left, grid lines across)."""
    out = []
    for t in scale.ticks():
        y = scale(t)
        out.append(_line(left, y, right, y, GRID))
        out.append(_text(left - 6, y + 4, fmt(t), size=10, anchor="end", color=MUTED))
    if label:
        out.append(_text(14, (top + bottom) / 2, label, size=11, anchor="middle", color=MUTED, rotate=-90))
    return out


def _marks_v(marks: list[Mark], scale: Scale, top: float, bottom: float, lo: float, hi: float) -> list[str]:
    """Vertical dashed lines (thresholds on an x axis), labels staggered so they do not overlap."""
    out, placed = [], []
    for m in sorted(marks, key=lambda m: m.value):
        if not (lo <= m.value <= hi):
            continue
        x = scale(m.value)
        out.append(_line(x, top, x, bottom, THRESHOLD, 1.5, "5 3"))
        row = 0
        while any(abs(x - px) < 110 and r == row for px, r in placed):
            row += 1
        placed.append((x, row))
        anchor = "end" if x > (scale.a + scale.b) / 2 else "start"
        dx = -4 if anchor == "end" else 4
        out.append(f'<g><title>{escape(m.label)}</title>'
                   + _text(x + dx, top + 11 + 13 * (row % 4), _short(m.label, 34), size=10, anchor=anchor, color=THRESHOLD,
                           weight="600") + "</g>")
    return out


def _short(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


# ---- histogram -----------------------------------------------------------------------------------

def histogram(edges: list[float], series: list[Series], *, x_label: str, y_label: str = "share of documents",
              marks: list[Mark] = (), log_x: bool = False, stacked: bool = False, integer: bool = False,
              width: int = 620, height: int = 300, y_format=None, label: str = "",
              x_ticks: list[tuple[float, str]] | None = None) -> str:
    """Bins `edges` (n+1) with one value list per series (n values): overlaid translucent bars with an
    outline, or stacked bars; `marks` are drawn as dashed vertical lines (thresholds). `x_ticks`: explicit
    (position, label) ticks."""
    y_format = y_format or compact
    legend, legend_h = _legend([(s.label, s.color) for s in series], 56, 8, width - 70)
    top, bottom, left, right = 14 + legend_h, height - 42, 56, width - 16
    lo, hi = edges[0], edges[-1]
    xs = Scale(lo, hi, left, right, log=log_x)
    peak = 0.0
    if stacked:
        for i in range(len(edges) - 1):
            peak = max(peak, sum((s.values[i] or 0) for s in series))
    else:
        peak = max([v or 0 for s in series for v in s.values] + [0])
    ys = Scale(0, (peak or 1) * 1.08, bottom, top)
    body = list(legend)
    body += _value_axis_h(ys, top, bottom, left, right, y_format, y_label)
    base = [0.0] * (len(edges) - 1)
    for s in series:
        path = []
        for i in range(len(edges) - 1):
            v = s.values[i] or 0
            x0, x1 = xs(edges[i]), xs(edges[i + 1])
            gap = 1 if x1 - x0 > 3 else 0
            y0 = ys(base[i] + v) if stacked else ys(v)
            y1 = ys(base[i]) if stacked else ys(0)
            tip = f"{s.label}: {_bin_label(edges[i], edges[i + 1], integer)} -> {y_format(v)}"
            if v:
                body.append(_rect(x0 + gap / 2, y0, x1 - x0 - gap, y1 - y0, s.color, tip, 1.0 if stacked else 0.45))
            if stacked:
                base[i] += v
            else:
                path.append(f"{'M' if i == 0 else 'L'}{x0:.2f},{ys(v):.2f}L{x1:.2f},{ys(v):.2f}")
        if path and not stacked:
            body.append(f'<path class="d" d="{"".join(path)}" fill="none" stroke="{s.color}" stroke-width="1.6"/>')
    body.append(_line(left, bottom, right, bottom, MUTED))
    if x_ticks is None:
        if integer:
            ticks = [e + 0.5 for e in edges[:-1]]
            ticks = ticks[:: max(1, math.ceil(len(ticks) / 12))]
        else:
            ticks = xs.ticks()
        x_ticks = [(t, compact(round(t) if integer else t)) for t in ticks]
    for t, text in x_ticks:
        x = xs(t)
        body.append(_line(x, bottom, x, bottom + 4, MUTED))
        body.append(_text(x, bottom + 16, text, size=10, anchor="middle", color=MUTED))
    body.append(_text((left + right) / 2, height - 8, x_label + (" (log scale)" if log_x else ""), size=11, anchor="middle",
                      color=MUTED))
    body += _marks_v(list(marks), xs, top, bottom, lo, hi)
    return _svg(width, height, body, label or x_label)


def _bin_label(a: float, b: float, integer: bool) -> str:
    if integer:
        return compact(round(a + 0.5))
    return f"[{compact(a, 4)}, {compact(b, 4)})"


# ---- bars ----------------------------------------------------------------------------------------

def bars(categories: list[str], series: list[Series], *, value_label: str, stacked: bool = False,
         horizontal: bool = True, log: bool = False, marks: list[Mark] = (), width: int = 620,
         height: int | None = None, fmt=None, show_totals: bool = True, label: str = "", legend: bool = True) -> str:
    """Bars per category: one per series side by side, or stacked. Horizontal bars suit long labels."""
    fmt = fmt or compact
    items = [(s.label, s.color) for s in series] if legend and (len(series) > 1 or stacked) else []
    leg, leg_h = _legend(items, 10, 8, width - 20)
    groups = len(categories)
    per = 1 if stacked else len(series)
    totals = [sum((s.values[i] or 0) for s in series) if stacked else max([(s.values[i] or 0) for s in series] + [0])
              for i in range(groups)]
    peak = max(totals + [0]) or 1
    positive = [v for s in series for v in s.values if v]
    low = min(positive) if positive else 1
    body = list(leg)
    if horizontal:
        label_w = min(300, max([len(c) for c in categories] + [4]) * 11 * CHAR_W + 12)
        bar_h = 16 if per == 1 else max(7, 22 // per + 4)
        band = bar_h * per + 10
        top = 12 + leg_h
        height = height or int(top + band * groups + 40)
        left, right, bottom = label_w + 8, width - 64, top + band * groups
        vs = Scale(low / 2 if log else 0, peak * (1.0 if log else 1.04), left, right, log=log)
        for t in vs.ticks():
            x = vs(t)
            body.append(_line(x, top, x, bottom, GRID))
            body.append(_text(x, bottom + 14, fmt(t), size=10, anchor="middle", color=MUTED))
        for i, c in enumerate(categories):
            y = top + i * band + 5
            body.append(_text(left - 8, y + bar_h * per / 2 + 4, _short(c, 48), size=11, anchor="end"))
            acc = vs.lo if log else 0.0
            for j, s in enumerate(series):
                v = s.values[i]
                if not v:
                    continue
                tip = f"{c} - {s.label}: {fmt(v)}" if len(series) > 1 else f"{c}: {fmt(v)}"
                if stacked:
                    x0, x1 = vs(acc), vs(acc + v)
                    acc += v
                    body.append(_rect(x0, y, x1 - x0, bar_h, s.color, tip))
                else:
                    yy = y + j * bar_h
                    body.append(_rect(left, yy, vs(v) - left, bar_h - 1, s.color, tip))
                    if show_totals:
                        body.append(_text(vs(v) + 4, yy + bar_h / 2 + 3, fmt(v), size=10, color=MUTED))
            if stacked and show_totals and totals[i]:
                body.append(_text(vs(acc) + 4, y + bar_h / 2 + 4, fmt(totals[i]), size=10, color=MUTED))
        body.append(_line(left, top, left, bottom, MUTED))
        body.append(_text((left + right) / 2, bottom + 32, value_label + (" (log scale)" if log else ""), size=11,
                          anchor="middle", color=MUTED))
        for m in marks:
            if vs.lo <= m.value <= vs.hi:
                x = vs(m.value)
                body.append(_line(x, top, x, bottom, THRESHOLD, 1.5, "5 3"))
                body.append(_text(x + 3, top - 2, m.label, size=10, color=THRESHOLD, weight="600"))
    else:
        height = height or 300
        longest = max([len(c) for c in categories] + [1])
        rotate = longest * 11 * CHAR_W > (width - 80) / max(groups, 1)
        bottom = height - (min(100, longest * 10 * CHAR_W * 0.62 + 26) if rotate else 44)
        top, left, right = 16 + leg_h, 60, width - 14
        vs = Scale(low / 2 if log else 0, peak * (1.0 if log else 1.1), bottom, top, log=log)
        body += _value_axis_h(vs, top, bottom, left, right, fmt, value_label)
        band = (right - left) / max(groups, 1)
        bar_w = min(48, (band - 8) / per)
        for i, c in enumerate(categories):
            cx = left + band * (i + 0.5)
            x0 = cx - bar_w * per / 2
            acc = vs.lo if log else 0.0
            for j, s in enumerate(series):
                v = s.values[i]
                if not v:
                    continue
                tip = f"{c} - {s.label}: {fmt(v)}" if len(series) > 1 else f"{c}: {fmt(v)}"
                if stacked:
                    y0, y1 = vs(acc + v), vs(acc)
                    acc += v
                    body.append(_rect(x0, y0, bar_w, y1 - y0, s.color, tip))
                else:
                    xx = x0 + j * bar_w
                    body.append(_rect(xx + 0.5, vs(v), bar_w - 1, bottom - vs(v), s.color, tip))
                    if show_totals and per <= 3:
                        body.append(_text(xx + bar_w / 2, vs(v) - 3, fmt(v), size=9, anchor="middle", color=MUTED))
            if stacked and show_totals and totals[i]:
                body.append(_text(cx, vs(acc) - 4, fmt(totals[i]), size=10, anchor="middle", color=MUTED))
            if rotate:
                body.append(_text(cx, bottom + 12, _short(c, 24), size=10, anchor="end", rotate=-35))
            else:
                body.append(_text(cx, bottom + 16, c, size=11, anchor="middle"))
        body.append(_line(left, bottom, right, bottom, MUTED))
        for m in marks:
            if vs.lo <= m.value <= vs.hi:
                y = vs(m.value)
                body.append(_line(left, y, right, y, THRESHOLD, 1.5, "5 3"))
                body.append(_text(right - 2, y - 4, m.label, size=10, anchor="end", color=THRESHOLD, weight="600"))
    return _svg(width, int(height), body, label or value_label)


# ---- heatmap -------------------------------------------------------------------------------------

def heatmap(rows: list[str], cols: list[str], values: list[list], *, row_title: str, col_title: str,
            fmt=None, color: str = "#c0392b", width: int = 620, label: str = "", notes: list[list] | None = None) -> str:
    """A matrix of counts: cell shade grows with the value (square-root scale), the value is written in it."""
    fmt = fmt or compact
    label_w = max([len(r) for r in rows] + [4]) * 11 * CHAR_W + 16
    left = 28 + label_w
    top = 58
    cell_w = min(110, (width - left - 12) / max(len(cols), 1))
    cell_h = 34
    height = int(top + cell_h * len(rows) + 16)
    peak = max([v for r in values for v in r if v] + [0]) or 1
    body = [_text(left + cell_w * len(cols) / 2, 14, col_title, size=11, anchor="middle", color=MUTED),
            _text(14, top + cell_h * len(rows) / 2, row_title, size=11, anchor="middle", color=MUTED, rotate=-90)]
    for j, c in enumerate(cols):
        body.append(_text(left + cell_w * (j + 0.5), top - 10, _short(c, 16), size=11, anchor="middle", weight="600"))
    for i, r in enumerate(rows):
        body.append(_text(left - 8, top + cell_h * (i + 0.5) + 4, r, size=11, anchor="end", weight="600"))
        for j, _c in enumerate(cols):
            v = values[i][j]
            x, y = left + cell_w * j, top + cell_h * i
            t = math.sqrt(v / peak) if v else 0.0
            tip = f"{r} -> {cols[j]}: {fmt(v) if v is not None else 'n/a'}"
            if notes and notes[i][j]:
                tip += f" ({notes[i][j]})"
            body.append(_rect(x + 1, y + 1, cell_w - 2, cell_h - 2, color if v else "#f5f7fa", tip,
                              0.12 + 0.88 * t if v else 1.0))
            text = "-" if v is None else fmt(v)
            body.append(_text(x + cell_w / 2, y + cell_h / 2 + 4, text, size=11, anchor="middle",
                              color="#ffffff" if t > 0.6 else INK))
    return _svg(width, height, body, label or f"{row_title} by {col_title}")


# ---- lines ---------------------------------------------------------------------------------------

def lines(xs: list[str], series: list[Series], *, y_label: str, fmt=None, width: int = 620, height: int = 320,
          y_min: float | None = 0, label: str = "", marks: list[Mark] = ()) -> str:
    """One line per series over categorical x (stages); points flagged in `dashed` are joined by dashes
    and drawn hollow (estimates)."""
    fmt = fmt or compact
    leg, leg_h = _legend([(s.label, s.color) for s in series], 60, 8, width - 70)
    longest = max([len(x) for x in xs] + [1])
    rotate = longest * 11 * CHAR_W > (width - 90) / max(len(xs), 1)
    top, left, right = 18 + leg_h, 60, width - 20
    bottom = height - (min(90, longest * 10 * CHAR_W * 0.62 + 26) if rotate else 44)
    values = [v for s in series for v in s.values if v is not None]
    peak = max(values + [0]) or 1
    ys = Scale(y_min if y_min is not None else min(values + [0]), peak * 1.08, bottom, top)
    body = list(leg) + _value_axis_h(ys, top, bottom, left, right, fmt, y_label)
    step = (right - left) / max(len(xs) - 1, 1) if len(xs) > 1 else 0
    px = [left + step * i if len(xs) > 1 else (left + right) / 2 for i in range(len(xs))]
    for i, x in enumerate(xs):
        if rotate:
            body.append(_text(px[i], bottom + 12, _short(x, 22), size=10, anchor="end", rotate=-35))
        else:
            body.append(_text(px[i], bottom + 16, x, size=11, anchor="middle"))
        body.append(_line(px[i], bottom, px[i], bottom + 4, MUTED))
    body.append(_line(left, bottom, right, bottom, MUTED))
    for m in marks:
        y = ys(m.value)
        body.append(_line(left, y, right, y, THRESHOLD, 1.2, "5 3"))
        body.append(_text(right - 2, y - 4, m.label, size=10, anchor="end", color=THRESHOLD))
    for s in series:
        dashed = s.dashed or [False] * len(s.values)
        prev = None
        for i, v in enumerate(s.values):
            if v is None:
                prev = None
                continue
            if prev is not None:
                j, pv = prev
                dash = "5 4" if (dashed[i] or dashed[j]) else None
                body.append(_line(px[j], ys(pv), px[i], ys(v), s.color, 2.2, dash))
            prev = (i, v)
        for i, v in enumerate(s.values):
            if v is None:
                continue
            fill = "#ffffff" if dashed[i] else s.color
            est = " (estimate)" if dashed[i] else ""
            body.append(f'<circle class="d" cx="{px[i]:.2f}" cy="{ys(v):.2f}" r="4" fill="{fill}" stroke="{s.color}" stroke-width="2">'
                        f"<title>{escape(f'{s.label} after {xs[i]}: {fmt(v)}{est}')}</title></circle>")
    return _svg(width, height, body, label or y_label)
