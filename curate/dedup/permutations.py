"""The MinHash permutation parameters ``(a, b)``, drawn exactly as datasketch draws them.

Why copy datasketch's draw instead of calling it: the kernel needs plain arrays, and building a
``datasketch.MinHash`` just to read ``.permutations`` would tie signature compatibility to an object
layout. A test checks these arrays equal datasketch's for both schemes.

Schemes (names are datasketch's):
- ``legacy``: ``h -> ((a*h + b) mod 2^64) mod (2^61 - 1)``, then the low 32 bits. This is the scheme of
  datasketch before 2.0, of Zyda-1, of RedPajama-V2 (``RandomState(42)``) and of datatrove. ``a*h + b`` is
  computed in uint64 and wraps before the Mersenne modulus: that is what numpy does in datasketch, and we
  keep it bit for bit. ``a`` in ``[1, p)``, ``b`` in ``[0, p)``, drawn in pairs from ``RandomState(seed)``.
- ``affine32``: datasketch 2.0's default. ``h`` is pre-mixed with the MurmurHash3 finalizer, then
  ``a*h + b mod 2^32`` with ``a`` odd (a bijection, so no collisions are added). Cheaper: 32-bit lanes.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

SCHEMES = ("legacy", "affine32")
MERSENNE61 = (1 << 61) - 1


@lru_cache(maxsize=64)
def _params(num_perm: int, seed: int, scheme: str) -> tuple[np.ndarray, np.ndarray]:
    if num_perm < 1:
        raise ValueError(f"num_perm must be positive, got {num_perm}")
    gen = np.random.RandomState(seed)
    if scheme == "legacy":
        p = np.uint64(MERSENNE61)
        ab = np.array([(gen.randint(1, p, dtype=np.uint64), gen.randint(0, p, dtype=np.uint64))
                       for _ in range(num_perm)], dtype=np.uint64)
        a, b = ab[:, 0].copy(), ab[:, 1].copy()
    elif scheme == "affine32":
        a = (gen.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)).astype(np.uint64)
        b = gen.randint(0, 1 << 32, num_perm, dtype=np.uint32).astype(np.uint64)
    else:
        raise ValueError(f"unknown permutation scheme {scheme!r}; expected one of {SCHEMES}")
    a.setflags(write=False)
    b.setflags(write=False)
    return a, b


def permutation_params(num_perm: int, seed: int, scheme: str = "legacy") -> tuple[np.ndarray, np.ndarray]:
    """``(a, b)``, two read-only uint64 arrays of length ``num_perm`` (affine32 values fit in 32 bits)."""
    return _params(int(num_perm), int(seed), scheme)
