"""Vectorised ``round(x, 8)`` that returns exactly what Python's ``round`` does.

Why: RPv2 rounds every ratio with Python's ``round(x, 8)``, which rounds the
exact binary value of ``x`` (correctly, ties to even). ``np.round`` computes
``rint(x * 1e8) / 1e8``; the product can be off by an ulp and flip a value
that sits within an ulp of a rounding boundary. We take numpy's answer where
``x * 1e8`` is safely away from a boundary and ask Python for the rest, which
are rare.
"""

from __future__ import annotations

import numpy as np

PRECISION = 8
_SCALE = 10.0**PRECISION


def py_round(x: np.ndarray) -> np.ndarray:
    """``[round(v, 8) for v in x]`` for a float64 array (NaN stays NaN)."""
    x = np.asarray(x, dtype=np.float64)
    y = x * _SCALE
    out = np.rint(y) / _SCALE
    frac = np.abs(y - np.floor(y))
    # |y| < 1e9 keeps the product's error below 1e-7, far inside the 1e-6 margin
    risky = ~(np.abs(y) < 1e9) | (np.abs(frac - 0.5) < 1e-6)
    risky &= np.isfinite(x)
    if risky.any():
        idx = np.flatnonzero(risky)
        out[idx] = [round(float(v), PRECISION) for v in x[idx]]
    return out
