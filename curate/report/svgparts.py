"""The pieces every chart of svg.py is drawn with: series and marks, number formats, nice ticks, scales, and
SVG elements (text, rectangles, lines, legends, axes)."""

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

def document(width: int, height: int, body: list[str], label: str) -> str:
    return (f'<svg class="chart" viewBox="0 0 {width} {height}" '
            f'width="{width}" height="{height}" role="img" aria-label="{escape(label)}" '
            f'style="font-family:{FONT};max-width:100%;height:auto">' + "".join(body) + "</svg>")


def text(x, y, s, size=11, anchor="start", color=INK, weight="normal", rotate=None, baseline="auto") -> str:
    transform = f' transform="rotate({rotate} {x:.1f} {y:.1f})"' if rotate else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" fill="{color}" text-anchor="{anchor}" '
            f'font-weight="{weight}" dominant-baseline="{baseline}"{transform}>{escape(str(s))}</text>')


def rect(x, y, w, h, color, tip: str, opacity: float = 1.0, stroke: str | None = None) -> str:
    extra = f' stroke="{stroke}" stroke-width="1"' if stroke else ""
    return (f'<rect class="d" x="{x:.2f}" y="{y:.2f}" width="{max(w, 0):.2f}" height="{max(h, 0):.2f}" fill="{color}" '
            f'fill-opacity="{opacity}"{extra}><title>{escape(tip)}</title></rect>')


def line(x1, y1, x2, y2, color=GRID, width=1.0, dash: str | None = None) -> str:
    d = f' stroke-dasharray="{dash}"' if dash else ""
    return f'<line x1="{x1:.2f}" y1="{y1:.2f}" x2="{x2:.2f}" y2="{y2:.2f}" stroke="{color}" stroke-width="{width}"{d}/>'


def legend(items: list[tuple[str, str]], x: float, y: float, width: float) -> tuple[list[str], float]:
    """Swatches and labels in rows from (x, y) within `width`; returns the elements and the height used."""
    out, cx, cy = [], x, y
    for label, color in items:
        w = 16 + len(label) * 11 * CHAR_W + 14
        if cx + w > x + width and cx > x:
            cx, cy = x, cy + 16
        out.append(f'<rect x="{cx:.1f}" y="{cy:.1f}" width="10" height="10" rx="2" fill="{color}"/>')
        out.append(text(cx + 14, cy + 9, label, size=11, color=INK))
        cx += w
    return out, (cy - y + 16 if items else 0)


def value_axis_h(scale: Scale, top: float, bottom: float, left: float, right: float, fmt, label: str) -> list[str]:
    """Vertical value axis (ticks on the left, grid lines across)."""
    out = []
    for t in scale.ticks():
        y = scale(t)
        out.append(line(left, y, right, y, GRID))
        out.append(text(left - 6, y + 4, fmt(t), size=10, anchor="end", color=MUTED))
    if label:
        out.append(text(14, (top + bottom) / 2, label, size=11, anchor="middle", color=MUTED, rotate=-90))
    return out


def marks_v(marks: list[Mark], scale: Scale, top: float, bottom: float, lo: float, hi: float) -> list[str]:
    """Vertical dashed lines (thresholds on an x axis), labels staggered so they do not overlap."""
    out, placed = [], []
    for m in sorted(marks, key=lambda m: m.value):
        if not (lo <= m.value <= hi):
            continue
        x = scale(m.value)
        out.append(line(x, top, x, bottom, THRESHOLD, 1.5, "5 3"))
        row = 0
        while any(abs(x - px) < 110 and r == row for px, r in placed):
            row += 1
        placed.append((x, row))
        anchor = "end" if x > (scale.a + scale.b) / 2 else "start"
        dx = -4 if anchor == "end" else 4
        out.append(f'<g><title>{escape(m.label)}</title>'
                   + text(x + dx, top + 11 + 13 * (row % 4), short(m.label, 34), size=10, anchor=anchor, color=THRESHOLD,
                           weight="600") + "</g>")
    return out


def short(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"
