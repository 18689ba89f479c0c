"""Chart primitives that draw inline SVG: histogram, bars (grouped or stacked), heatmap, lines.

No library and no script: every chart is a self-contained `<svg class="chart">` string that scales to
its container (a viewBox). Hovering a bar, cell or point shows its exact value (an SVG `<title>`).
Axes get "nice" ticks (1, 2, 5 x 10^k) on linear scales and powers of ten on log scales.
"""

from __future__ import annotations

import math
from html import escape

from curate.report import svgparts as draw
from curate.report.svgparts import CHAR_W, GRID, INK, MUTED, Mark, Scale, Series, THRESHOLD, compact

__all__ = ["Mark", "Series", "compact", "histogram", "bars", "heatmap", "lines"]


# ---- histogram -----------------------------------------------------------------------------------

def histogram(edges: list[float], series: list[Series], *, x_label: str, y_label: str = "share of documents",
              marks: list[Mark] = (), log_x: bool = False, stacked: bool = False, integer: bool = False,
              width: int = 620, height: int = 300, y_format=None, label: str = "",
              x_ticks: list[tuple[float, str]] | None = None) -> str:
    """Bins `edges` (n+1) with one value list per series (n values): overlaid translucent bars with an
    outline, or stacked bars; `marks` are drawn as dashed vertical lines (thresholds). `x_ticks`: explicit
    (position, label) ticks."""
    y_format = y_format or compact
    legend, legend_h = draw.legend([(s.label, s.color) for s in series], 56, 8, width - 70)
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
    body += draw.value_axis_h(ys, top, bottom, left, right, y_format, y_label)
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
                body.append(draw.rect(x0 + gap / 2, y0, x1 - x0 - gap, y1 - y0, s.color, tip, 1.0 if stacked else 0.45))
            if stacked:
                base[i] += v
            else:
                path.append(f"{'M' if i == 0 else 'L'}{x0:.2f},{ys(v):.2f}L{x1:.2f},{ys(v):.2f}")
        if path and not stacked:
            body.append(f'<path class="d" d="{"".join(path)}" fill="none" stroke="{s.color}" stroke-width="1.6"/>')
    body.append(draw.line(left, bottom, right, bottom, MUTED))
    if x_ticks is None:
        if integer:
            ticks = [e + 0.5 for e in edges[:-1]]
            ticks = ticks[:: max(1, math.ceil(len(ticks) / 12))]
        else:
            ticks = xs.ticks()
        x_ticks = [(t, compact(round(t) if integer else t)) for t in ticks]
    for t, text in x_ticks:
        x = xs(t)
        body.append(draw.line(x, bottom, x, bottom + 4, MUTED))
        body.append(draw.text(x, bottom + 16, text, size=10, anchor="middle", color=MUTED))
    body.append(draw.text((left + right) / 2, height - 8, x_label + (" (log scale)" if log_x else ""), size=11, anchor="middle",
                      color=MUTED))
    body += draw.marks_v(list(marks), xs, top, bottom, lo, hi)
    return draw.document(width, height, body, label or x_label)


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
    leg, leg_h = draw.legend(items, 10, 8, width - 20)
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
            body.append(draw.line(x, top, x, bottom, GRID))
            body.append(draw.text(x, bottom + 14, fmt(t), size=10, anchor="middle", color=MUTED))
        for i, c in enumerate(categories):
            y = top + i * band + 5
            body.append(draw.text(left - 8, y + bar_h * per / 2 + 4, draw.short(c, 48), size=11, anchor="end"))
            acc = vs.lo if log else 0.0
            for j, s in enumerate(series):
                v = s.values[i]
                if not v:
                    continue
                tip = f"{c} - {s.label}: {fmt(v)}" if len(series) > 1 else f"{c}: {fmt(v)}"
                if stacked:
                    x0, x1 = vs(acc), vs(acc + v)
                    acc += v
                    body.append(draw.rect(x0, y, x1 - x0, bar_h, s.color, tip))
                else:
                    yy = y + j * bar_h
                    body.append(draw.rect(left, yy, vs(v) - left, bar_h - 1, s.color, tip))
                    if show_totals:
                        body.append(draw.text(vs(v) + 4, yy + bar_h / 2 + 3, fmt(v), size=10, color=MUTED))
            if stacked and show_totals and totals[i]:
                body.append(draw.text(vs(acc) + 4, y + bar_h / 2 + 4, fmt(totals[i]), size=10, color=MUTED))
        body.append(draw.line(left, top, left, bottom, MUTED))
        body.append(draw.text((left + right) / 2, bottom + 32, value_label + (" (log scale)" if log else ""), size=11,
                          anchor="middle", color=MUTED))
        for m in marks:
            if vs.lo <= m.value <= vs.hi:
                x = vs(m.value)
                body.append(draw.line(x, top, x, bottom, THRESHOLD, 1.5, "5 3"))
                body.append(draw.text(x + 3, top - 2, m.label, size=10, color=THRESHOLD, weight="600"))
    else:
        height = height or 300
        longest = max([len(c) for c in categories] + [1])
        rotate = longest * 11 * CHAR_W > (width - 80) / max(groups, 1)
        bottom = height - (min(100, longest * 10 * CHAR_W * 0.62 + 26) if rotate else 44)
        top, left, right = 16 + leg_h, 60, width - 14
        vs = Scale(low / 2 if log else 0, peak * (1.0 if log else 1.1), bottom, top, log=log)
        body += draw.value_axis_h(vs, top, bottom, left, right, fmt, value_label)
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
                    body.append(draw.rect(x0, y0, bar_w, y1 - y0, s.color, tip))
                else:
                    xx = x0 + j * bar_w
                    body.append(draw.rect(xx + 0.5, vs(v), bar_w - 1, bottom - vs(v), s.color, tip))
                    if show_totals and per <= 3:
                        body.append(draw.text(xx + bar_w / 2, vs(v) - 3, fmt(v), size=9, anchor="middle", color=MUTED))
            if stacked and show_totals and totals[i]:
                body.append(draw.text(cx, vs(acc) - 4, fmt(totals[i]), size=10, anchor="middle", color=MUTED))
            if rotate:
                body.append(draw.text(cx, bottom + 12, draw.short(c, 24), size=10, anchor="end", rotate=-35))
            else:
                body.append(draw.text(cx, bottom + 16, c, size=11, anchor="middle"))
        body.append(draw.line(left, bottom, right, bottom, MUTED))
        for m in marks:
            if vs.lo <= m.value <= vs.hi:
                y = vs(m.value)
                body.append(draw.line(left, y, right, y, THRESHOLD, 1.5, "5 3"))
                body.append(draw.text(right - 2, y - 4, m.label, size=10, anchor="end", color=THRESHOLD, weight="600"))
    return draw.document(width, int(height), body, label or value_label)


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
    body = [draw.text(left + cell_w * len(cols) / 2, 14, col_title, size=11, anchor="middle", color=MUTED),
            draw.text(14, top + cell_h * len(rows) / 2, row_title, size=11, anchor="middle", color=MUTED, rotate=-90)]
    for j, c in enumerate(cols):
        body.append(draw.text(left + cell_w * (j + 0.5), top - 10, draw.short(c, 16), size=11, anchor="middle", weight="600"))
    for i, r in enumerate(rows):
        body.append(draw.text(left - 8, top + cell_h * (i + 0.5) + 4, r, size=11, anchor="end", weight="600"))
        for j, _c in enumerate(cols):
            v = values[i][j]
            x, y = left + cell_w * j, top + cell_h * i
            t = math.sqrt(v / peak) if v else 0.0
            tip = f"{r} -> {cols[j]}: {fmt(v) if v is not None else 'n/a'}"
            if notes and notes[i][j]:
                tip += f" ({notes[i][j]})"
            body.append(draw.rect(x + 1, y + 1, cell_w - 2, cell_h - 2, color if v else "#f5f7fa", tip,
                              0.12 + 0.88 * t if v else 1.0))
            text = "-" if v is None else fmt(v)
            body.append(draw.text(x + cell_w / 2, y + cell_h / 2 + 4, text, size=11, anchor="middle",
                              color="#ffffff" if t > 0.6 else INK))
    return draw.document(width, height, body, label or f"{row_title} by {col_title}")


# ---- lines ---------------------------------------------------------------------------------------

def lines(xs: list[str], series: list[Series], *, y_label: str, fmt=None, width: int = 620, height: int = 320,
          y_min: float | None = 0, label: str = "", marks: list[Mark] = ()) -> str:
    """One line per series over categorical x (stages); points flagged in `dashed` are joined by dashes
    and drawn hollow (estimates)."""
    fmt = fmt or compact
    leg, leg_h = draw.legend([(s.label, s.color) for s in series], 60, 8, width - 70)
    longest = max([len(x) for x in xs] + [1])
    rotate = longest * 11 * CHAR_W > (width - 90) / max(len(xs), 1)
    top, left, right = 18 + leg_h, 60, width - 20
    bottom = height - (min(90, longest * 10 * CHAR_W * 0.62 + 26) if rotate else 44)
    values = [v for s in series for v in s.values if v is not None]
    peak = max(values + [0]) or 1
    ys = Scale(y_min if y_min is not None else min(values + [0]), peak * 1.08, bottom, top)
    body = list(leg) + draw.value_axis_h(ys, top, bottom, left, right, fmt, y_label)
    step = (right - left) / max(len(xs) - 1, 1) if len(xs) > 1 else 0
    px = [left + step * i if len(xs) > 1 else (left + right) / 2 for i in range(len(xs))]
    for i, x in enumerate(xs):
        if rotate:
            body.append(draw.text(px[i], bottom + 12, draw.short(x, 22), size=10, anchor="end", rotate=-35))
        else:
            body.append(draw.text(px[i], bottom + 16, x, size=11, anchor="middle"))
        body.append(draw.line(px[i], bottom, px[i], bottom + 4, MUTED))
    body.append(draw.line(left, bottom, right, bottom, MUTED))
    for m in marks:
        y = ys(m.value)
        body.append(draw.line(left, y, right, y, THRESHOLD, 1.2, "5 3"))
        body.append(draw.text(right - 2, y - 4, m.label, size=10, anchor="end", color=THRESHOLD))
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
                body.append(draw.line(px[j], ys(pv), px[i], ys(v), s.color, 2.2, dash))
            prev = (i, v)
        for i, v in enumerate(s.values):
            if v is None:
                continue
            fill = "#ffffff" if dashed[i] else s.color
            est = " (estimate)" if dashed[i] else ""
            body.append(f'<circle class="d" cx="{px[i]:.2f}" cy="{ys(v):.2f}" r="4" fill="{fill}" stroke="{s.color}" stroke-width="2">'
                        f"<title>{escape(f'{s.label} after {xs[i]}: {fmt(v)}{est}')}</title></circle>")
    return draw.document(width, height, body, label or y_label)
