"""Histogram bins shared by groups of values (kept and removed), so their shapes can be compared.

Small integer ranges get one bin per integer; otherwise bins span the bulk of the values (percentiles and
quartile fences; values beyond fall in the edge bins, said in `clipped`), widened to show thresholds close
to the data, in log10 steps when the values span decades.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

REACH = 1.5   # how far beyond the kept range the axis may reach for other values, in kept spans
FENCE = 3.0   # the kept range: quartiles +- FENCE x the interquartile range, within the 0.5th-99.5th percentiles


@dataclass
class Bins:
    edges: list[float]
    log: bool
    integer: bool
    clipped: bool

    def shares(self, values: np.ndarray, weights: np.ndarray | None = None) -> list[float]:
        """Weighted share of the values in each bin (values beyond the edges counted in the edge bins)."""
        if not len(values):
            return [0.0] * (len(self.edges) - 1)
        return [float(x) for x in self.counts(values, weights) / (weights.sum() if weights is not None else len(values))]

    def counts(self, values: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        edges = np.asarray(self.edges)
        clipped = np.clip(values, edges[0], np.nextafter(edges[-1], -np.inf))
        hist, _ = np.histogram(clipped, bins=edges, weights=weights)
        return hist


def make_bins(values: np.ndarray, marks: list[float] = (), *, log: bool | None = None, bins: int = 40,
              unit: bool = False, core: np.ndarray | None = None) -> Bins | None:
    """`unit`: values that are probabilities get the whole [0, 1] (scores near 1 stay visibly near 1).
    `core`: the group whose shape matters most (kept documents): its bulk sets the range, which grows towards
    the other values by at most `REACH` times its own span, so a tail of junk does not squash the shape."""
    values = values[np.isfinite(values)]
    if not len(values):
        return None
    if unit and values.min() >= 0 and values.max() <= 1.001:
        return Bins([float(x) for x in np.linspace(0, 1.001, bins + 1)], False, False, False)
    lo_all, hi_all = float(values.min()), float(values.max())
    distinct = np.unique(values[: 200_000])
    if np.all(np.mod(distinct, 1) == 0) and hi_all - lo_all <= 60 and len(distinct) <= 61:
        lo, hi = lo_all, hi_all
        for m in marks:
            if lo - 5 <= m <= hi + 5:
                lo, hi = min(lo, np.floor(m)), max(hi, np.ceil(m))
        return Bins([float(x) for x in np.arange(lo - 0.5, hi + 1.5)], False, True, False)
    lo, hi = (float(x) for x in np.quantile(values, [0.005, 0.995]))
    if hi <= lo:
        lo, hi = lo_all, hi_all
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    if log is None:
        log = lo > 0 and hi / lo >= 200
    core = core[np.isfinite(core)] if core is not None else None
    if core is not None and len(core) >= 20 and (not log or core.min() > 0):
        f = np.log10 if log else (lambda x: x)
        g = (lambda x: 10 ** x) if log else (lambda x: x)
        c = f(core)
        q005, q25, q75, q995 = (float(x) for x in np.quantile(c, [0.005, 0.25, 0.75, 0.995]))
        iqr = q75 - q25
        clo, chi = (max(q005, q25 - FENCE * iqr), min(q995, q75 + FENCE * iqr)) if iqr > 0 else (q005, q995)
        if chi > clo:
            reach = REACH * (chi - clo)
            lo = g(max(f(lo), clo - reach)) if f(lo) < clo else g(clo)
            hi = g(min(f(hi), chi + reach)) if f(hi) > chi else g(chi)
    if log and lo <= 0:
        positive = values[values > 0]
        if not len(positive):
            log = False
        else:
            lo = float(np.quantile(positive, 0.005))
    span = (np.log10(hi) - np.log10(lo)) if log else hi - lo
    for m in marks:
        if log:
            if m > 0 and np.log10(lo) - span <= np.log10(m) <= np.log10(hi) + span:
                lo, hi = min(lo, m / 1.15), max(hi, m * 1.15)
        elif lo - span <= m <= hi + span:
            pad = span * 0.04
            lo, hi = min(lo, m - pad), max(hi, m + pad)
    edges = np.geomspace(lo, hi, bins + 1) if log else np.linspace(lo, hi, bins + 1)
    if np.all(np.mod(distinct, 1) == 0):  # counts: no bin narrower than one unit (no empty bins between integers)
        whole = np.unique(np.ceil(edges))
        if len(whole) >= 3:
            edges = whole
    clipped = bool(lo_all < lo or hi_all > hi)
    return Bins([float(x) for x in edges], bool(log), False, clipped)
