"""Colors: one per source, the same in every chart of a report, and fixed colors for kept and removed."""

from __future__ import annotations

import colorsys

KEPT = "#3b8e5a"
REMOVED = "#d64545"
NEUTRAL = "#7b8794"
ESTIMATE = "#9aa5b1"

# Tableau-like hues without the green and red that mean kept and removed.
SOURCE_COLORS = ["#4e79a7", "#f28e2b", "#8c6bb1", "#9c755f", "#e0b400", "#2bb6c8", "#ff7fb0", "#636e72",
                 "#a0cbe8", "#ffbe7d"]


def source_colors(sources: list[str]) -> dict[str, str]:
    """A color per source, in priority order; beyond the palette, evenly spaced hues."""
    out = {}
    for i, s in enumerate(sources):
        if i < len(SOURCE_COLORS):
            out[s] = SOURCE_COLORS[i]
        else:
            r, g, b = colorsys.hls_to_rgb(((i - len(SOURCE_COLORS)) * 0.618034) % 1.0, 0.5, 0.55)
            out[s] = f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"
    return out


def shades(n: int, base: str = "#4e79a7") -> list[str]:
    """`n` shades of one hue, dark to light (series that are steps of one thing, e.g. mixture columns)."""
    r, g, b = (int(base[i:i + 2], 16) / 255 for i in (1, 3, 5))
    h, l_, s = colorsys.rgb_to_hls(r, g, b)
    out = []
    for i in range(n):
        lightness = 0.32 + 0.42 * (i / max(n - 1, 1))
        rr, gg, bb = colorsys.hls_to_rgb(h, lightness, s)
        out.append(f"#{int(rr * 255):02x}{int(gg * 255):02x}{int(bb * 255):02x}")
    return out
