"""LSH banding: band keys per document, the choice of bands x rows, and the S-curve to show before a run.

Why 64-bit keys instead of datasketch's raw band bytes: grouping by ``(band, key)`` in hash partitions
(DuckDB, Arrow, Ray shuffles) is much cheaper on one uint64 column than on variable byte strings, and at
64 bits a chance collision between two different bands is ~1e-19 per pair: negligible next to MinHash's
own error. Keys also depend on the band index, so keys of different bands never coincide by design and
one column can hold all bands.

Key of band ``j`` (rows ``j*rows .. j*rows+rows-1`` of the signature; any permutations past
``bands*rows`` are unused, as in RedPajama-V2's 14 x 9 of 128):
``h = (j + 1) * 0x9E3779B97F4A7C15``; for each pair of consecutive rows ``(lo, hi)`` (the last one
alone, ``hi = 0``, when ``rows`` is odd): ``h = fmix64(h ^ (lo | hi << 32))``; the key is ``h``.
``fmix64`` is MurmurHash3's 64-bit finalizer. All uint64 with wraparound, vectorised in numpy.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

DEFAULT_POINTS = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0)

_GOLD = np.uint64(0x9E3779B97F4A7C15)
_FM1 = np.uint64(0xFF51AFD7ED558CCD)
_FM2 = np.uint64(0xC4CEB9FE1A85EC53)
_S33 = np.uint64(33)
_S32 = np.uint64(32)


def _fmix64(h: np.ndarray) -> np.ndarray:
    h ^= h >> _S33
    h *= _FM1
    h ^= h >> _S33
    h *= _FM2
    h ^= h >> _S33
    return h


def band_keys(signatures, bands: int, rows: int) -> np.ndarray:
    """``(n_docs, bands)`` uint64 keys from ``(n_docs, num_perm)`` uint32 signatures (or a
    ``Signatures``). Identical band rows give identical keys; see the module docstring for the formula."""
    values = getattr(signatures, "values", signatures)
    sig = np.asarray(values)
    if sig.ndim != 2:
        raise ValueError(f"signatures must be 2-D (n_docs, num_perm), got shape {sig.shape}")
    if bands < 1 or rows < 1 or bands * rows > sig.shape[1]:
        raise ValueError(f"bands x rows = {bands} x {rows} does not fit {sig.shape[1]} permutations")
    n = sig.shape[0]
    cells = sig[:, :bands * rows].astype(np.uint64).reshape(n, bands, rows)
    h = np.empty((n, bands), dtype=np.uint64)
    h[:] = (np.arange(1, bands + 1, dtype=np.uint64) * _GOLD)[None, :]
    with np.errstate(over="ignore"):
        for j in range(0, rows, 2):
            word = cells[:, :, j].copy()
            if j + 1 < rows:
                word |= cells[:, :, j + 1] << _S32
            h = _fmix64(h ^ word)
    return h


def choose_bands(threshold: float, num_perm: int, weights=(0.5, 0.5)) -> tuple[int, int]:
    """(bands, rows) minimising the weighted false positive + false negative areas around ``threshold``:
    datasketch's ``_optimal_param`` (what ``MinHashLSH(threshold, num_perm)`` chooses), with its default
    weights, computed here without scipy (see ``_choose``)."""
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold}")
    if num_perm < 1:
        raise ValueError(f"num_perm must be positive, got {num_perm}")
    fp, fn = weights
    return _choose(float(threshold), int(num_perm), float(fp), float(fn))


@lru_cache(maxsize=256)
def _choose(threshold: float, num_perm: int, fp: float, fn: float) -> tuple[int, int]:
    """datasketch's search (every bands x rows <= num_perm; the first minimum in (bands, rows) order wins),
    with its two integrals by Gauss-Legendre quadrature instead of scipy's ``quad``: the integrands are
    polynomials of degree bands * rows <= num_perm, which ``num_perm // 2 + 1`` nodes integrate exactly."""
    x, w = np.polynomial.legendre.leggauss(min(num_perm // 2 + 2, 512))
    below, above = threshold / 2 * (x + 1), threshold + (1 - threshold) / 2 * (x + 1)   # nodes on [0, t], [t, 1]
    best, choice = np.inf, (0, 0)
    for b in range(1, num_perm + 1):
        r = np.arange(1, num_perm // b + 1, dtype=np.float64)[:, None]
        false_pos = threshold / 2 * ((1 - (1 - below ** r) ** b) @ w)
        false_neg = (1 - threshold) / 2 * (((1 - above ** r) ** b) @ w)
        error = false_pos * fp + false_neg * fn
        i = int(np.argmin(error))
        if error[i] < best:
            best, choice = float(error[i]), (b, i + 1)
    return choice


def candidate_probability(s, bands: int, rows: int):
    """P(two documents with Jaccard ``s`` share at least one band) = 1 - (1 - s^rows)^bands."""
    return 1.0 - (1.0 - np.power(s, rows)) ** bands


def s_curve(bands: int, rows: int, points=DEFAULT_POINTS) -> list[tuple[float, float]]:
    """``[(jaccard, P(candidate)), ...]`` at ``points``."""
    return [(float(s), float(candidate_probability(float(s), bands, rows))) for s in points]


def threshold_of(bands: int, rows: int) -> float:
    """The Jaccard where the S-curve is steepest, about ``(1/bands)^(1/rows)``."""
    return (1.0 / bands) ** (1.0 / rows)


def format_s_curve(bands: int, rows: int, points=DEFAULT_POINTS, num_perm: int | None = None) -> str:
    """The S-curve as a small text table, for printing before a run."""
    used = bands * rows
    of = f" of {num_perm}" if num_perm else ""
    lines = [f"LSH {bands} bands x {rows} rows ({used}{of} permutations), "
             f"threshold ~ (1/b)^(1/r) = {threshold_of(bands, rows):.3f}",
             "  Jaccard  P(candidate)"]
    for s, p in s_curve(bands, rows, points):
        lines.append(f"  {s:7.2f}  {p:12.4f}")
    return "\n".join(lines)
