"""The 64-bit hashing primitives both word kernels share: FNV-1a's seed and prime, and a finalizer (the
murmur3 fmix64 mix) that spreads FNV's weak low bits before a hash picks a table slot."""

from __future__ import annotations

import numba as nb
import numpy as np

U64 = np.uint64
SEED = U64(0x9E3779B97F4A7C15)
PRIME = U64(0x100000001B3)


@nb.njit(cache=True, inline="always")
def mix(h):
    h ^= h >> U64(33)
    h *= U64(0xFF51AFD7ED558CCD)
    h ^= h >> U64(33)
    h *= U64(0xC4CEB9FE1A85EC53)
    h ^= h >> U64(33)
    return h
