"""32-bit shingle hashes, compiled with numba so they run inside the signature kernel.

Why three:
- ``sha1``: datasketch's default ``sha1_hash32`` (first 4 bytes of SHA-1, little-endian), kept so
  signatures can equal datasketch's (and Zyda-1's and RedPajama-V2's) bit for bit.
- ``murmur3``: MurmurHash3_x86_32, the hash Zyda-2 named; ~6x cheaper than SHA-1 per shingle.
- ``poly64``: the fast default. ``h = sum((x_j + 1) * B^(L-1-j)) mod 2^64`` over the shingle's bytes
  ``x_0..x_{L-1}`` (``B`` below), then ``low32(fmix64(h ^ seed))``. Because it is a polynomial, the kernel
  gets every overlapping shingle's value from one running prefix (``P[e] - P[s] * B^(e-s)``), O(1) per
  shingle instead of O(shingle length): a character 25-gram signature takes ~40% less time than with
  murmur3. Shingles are short (the known structured collisions of polynomial hashes mod 2^64 need
  specially built inputs of thousands of bytes) and the 64-bit value is fully avalanched before the
  truncation, so it behaves as a 32-bit random hash.

All read UTF-8 bytes one at a time and compute with explicit widths and masks, so a value is the same
on every machine, byte order and process (no salted Python ``hash``). Each has a pure-Python twin
below; passing it to ``datasketch.MinHash(hashfunc=...)`` reproduces our signatures exactly.

All values are carried in uint64 variables masked to 32 bits: numba promotes mixed-width integer
arithmetic (and int64 with uint64 to float64), so every constant here is a ``np.uint64``.
"""

from __future__ import annotations

import hashlib
import struct

import numpy as np
from numba import njit

HASHES = ("sha1", "murmur3", "poly64")

_M32 = np.uint64(0xFFFFFFFF)
_U0 = np.uint64(0)
_U1 = np.uint64(1)
_U8 = np.uint64(8)
_U16 = np.uint64(16)
_U24 = np.uint64(24)
_U32 = np.uint64(32)

# MurmurHash3_x86_32 constants
_C1 = np.uint64(0xCC9E2D51)
_C2 = np.uint64(0x1B873593)
_N5 = np.uint64(5)
_N = np.uint64(0xE6546B64)
_F1 = np.uint64(0x85EBCA6B)
_F2 = np.uint64(0xC2B2AE35)
_S13 = np.uint64(13)
_S15 = np.uint64(15)

# poly64: base (odd) and MurmurHash3's 64-bit finalizer
POLY_BASE = np.uint64(0x9E3779B97F4A7C15)
_FM1 = np.uint64(0xFF51AFD7ED558CCD)
_FM2 = np.uint64(0xC4CEB9FE1A85EC53)
_S33 = np.uint64(33)

# SHA-1 constants
_H0 = np.uint64(0x67452301)
_H1 = np.uint64(0xEFCDAB89)
_H2 = np.uint64(0x98BADCFE)
_H3 = np.uint64(0x10325476)
_H4 = np.uint64(0xC3D2E1F0)
_K0 = np.uint64(0x5A827999)
_K1 = np.uint64(0x6ED9EBA1)
_K2 = np.uint64(0x8F1BBCDC)
_K3 = np.uint64(0xCA62C1D6)
_S1 = np.uint64(1)
_S5 = np.uint64(5)
_S30 = np.uint64(30)


@njit(inline="always", cache=True)
def _rotl32(x, r):
    return ((x << r) | (x >> (_U32 - r))) & _M32


@njit(inline="always", cache=True)
def fmix32(h):
    """MurmurHash3's 32-bit finalizer (a bijection); datasketch's affine32 scheme pre-mixes with it."""
    h ^= h >> _U16
    h = (h * _F1) & _M32
    h ^= h >> _S13
    h = (h * _F2) & _M32
    h ^= h >> _U16
    return h


@njit(inline="always", cache=True)
def poly64_finish(h, seed):
    """The poly64 value from the polynomial ``h`` of a shingle's bytes: low32(fmix64(h ^ seed))."""
    h ^= np.uint64(seed)
    h ^= h >> _S33
    h *= _FM1
    h ^= h >> _S33
    h *= _FM2
    h ^= h >> _S33
    return h & _M32


@njit(cache=True, nogil=True)
def poly64_32(data, start, length, seed):
    """poly64 of ``data[start:start+length]`` computed directly (the kernel uses prefixes instead)."""
    h = _U0
    for p in range(start, start + length):
        h = h * POLY_BASE + np.uint64(data[p]) + _U1
    return poly64_finish(h, seed)


@njit(cache=True, nogil=True)
def murmur3_32(data, start, length, seed):
    """MurmurHash3_x86_32 of ``data[start:start+length]`` (uint8 array) with a 32-bit seed."""
    h = np.uint64(seed) & _M32
    nblocks = length // 4
    p = start
    for _ in range(nblocks):
        k = (np.uint64(data[p]) | (np.uint64(data[p + 1]) << _U8)
             | (np.uint64(data[p + 2]) << _U16) | (np.uint64(data[p + 3]) << _U24))
        k = (k * _C1) & _M32
        k = _rotl32(k, _S15)
        k = (k * _C2) & _M32
        h ^= k
        h = _rotl32(h, _S13)
        h = (h * _N5 + _N) & _M32
        p += 4
    rem = length & 3
    if rem:
        k = _U0
        if rem == 3:
            k ^= np.uint64(data[p + 2]) << _U16
        if rem >= 2:
            k ^= np.uint64(data[p + 1]) << _U8
        k ^= np.uint64(data[p])
        k = (k * _C1) & _M32
        k = _rotl32(k, _S15)
        k = (k * _C2) & _M32
        h ^= k
    h ^= np.uint64(length) & _M32
    return fmix32(h)


@njit(inline="always", cache=True)
def _sha1_block(w, h0, h1, h2, h3, h4):
    """One SHA-1 compression; ``w[0:16]`` holds the block's big-endian words (a rolling schedule)."""
    a, b, c, d, e = h0, h1, h2, h3, h4
    for t in range(80):
        if t >= 16:
            x = _rotl32(w[(t - 3) & 15] ^ w[(t - 8) & 15] ^ w[(t - 14) & 15] ^ w[t & 15], _S1)
            w[t & 15] = x
        else:
            x = w[t]
        if t < 20:
            f = (d ^ (b & (c ^ d))) + _K0
        elif t < 40:
            f = (b ^ c ^ d) + _K1
        elif t < 60:
            f = ((b & c) | (d & (b | c))) + _K2
        else:
            f = (b ^ c ^ d) + _K3
        tmp = (_rotl32(a, _S5) + f + e + x) & _M32
        e = d
        d = c
        c = _rotl32(b, _S30)
        b = a
        a = tmp
    return (h0 + a) & _M32, (h1 + b) & _M32, (h2 + c) & _M32, (h3 + d) & _M32, (h4 + e) & _M32


@njit(inline="always", cache=True)
def _load_words(w, src, base):
    for t in range(16):
        q = base + 4 * t
        w[t] = ((np.uint64(src[q]) << _U24) | (np.uint64(src[q + 1]) << _U16)
                | (np.uint64(src[q + 2]) << _U8) | np.uint64(src[q + 3]))


@njit(cache=True, nogil=True)
def sha1_32(data, start, length, w, buf):
    """datasketch's ``sha1_hash32``: SHA-1 of ``data[start:start+length]``, first 4 digest bytes read
    little-endian. ``w`` (uint64[16]) and ``buf`` (uint8[128]) are caller-owned scratch: no allocation."""
    full = length // 64
    # the tail, 0x80, zeros and the 64-bit big-endian bit length fill one or two more blocks, in buf
    rem = length - full * 64
    src = start + full * 64
    for i in range(rem):
        buf[i] = data[src + i]
    buf[rem] = 0x80
    nb = 64 if rem < 56 else 128
    for i in range(rem + 1, nb - 8):
        buf[i] = 0
    bits = np.uint64(length) << np.uint64(3)
    for i in range(8):
        buf[nb - 1 - i] = np.uint8((bits >> (np.uint64(i) * _U8)) & np.uint64(0xFF))
    h0, h1, h2, h3, h4 = _H0, _H1, _H2, _H3, _H4
    for blk in range(full + nb // 64):
        if blk < full:
            _load_words(w, data, start + blk * 64)
        else:
            _load_words(w, buf, (blk - full) * 64)
        h0, h1, h2, h3, h4 = _sha1_block(w, h0, h1, h2, h3, h4)
    # digest bytes 0..3 are h0 big-endian; datasketch unpacks them "<I": a byte swap of h0
    return (((h0 & np.uint64(0xFF)) << _U24) | (((h0 >> _U8) & np.uint64(0xFF)) << _U16)
            | (((h0 >> _U16) & np.uint64(0xFF)) << _U8) | (h0 >> _U24))


# ---------------------------------------------------------------------------------------------
# Pure-Python references (tests, and `hashfunc=` for datasketch when checking the fast mode).
# ---------------------------------------------------------------------------------------------

def sha1_hash32_py(b: bytes) -> int:
    """Same as ``datasketch.hashfunc.sha1_hash32``."""
    return struct.unpack("<I", hashlib.sha1(b).digest()[:4])[0]


def murmur3_32_py(b: bytes, seed: int = 0) -> int:
    """MurmurHash3_x86_32 in plain Python: the reference the compiled version is tested against."""
    m = 0xFFFFFFFF

    def rotl(x, r):
        return ((x << r) | (x >> (32 - r))) & m

    h = seed & m
    n = len(b) // 4
    for i in range(n):
        k = int.from_bytes(b[4 * i:4 * i + 4], "little")
        k = rotl((k * 0xCC9E2D51) & m, 15)
        h ^= (k * 0x1B873593) & m
        h = (rotl(h, 13) * 5 + 0xE6546B64) & m
    tail = b[4 * n:]
    if tail:
        k = int.from_bytes(tail, "little")
        k = rotl((k * 0xCC9E2D51) & m, 15)
        h ^= (k * 0x1B873593) & m
    h ^= len(b) & m
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & m
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & m
    return h ^ (h >> 16)


def poly64_32_py(b: bytes, seed: int = 0) -> int:
    """poly64 in plain Python (see the module docstring)."""
    m64 = (1 << 64) - 1
    base = int(POLY_BASE)
    h = 0
    for x in b:
        h = (h * base + x + 1) & m64
    h ^= seed & m64
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & m64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & m64
    h ^= h >> 33
    return h & 0xFFFFFFFF


def python_hashfunc(name: str, seed: int = 0):
    """The pure-Python shingle hash for ``name``, shaped as datasketch's ``hashfunc`` (bytes -> int)."""
    if name == "sha1":
        return sha1_hash32_py
    if name == "murmur3":
        return lambda b: murmur3_32_py(b, seed)
    if name == "poly64":
        return lambda b: poly64_32_py(b, seed)
    raise ValueError(f"unknown shingle hash {name!r}; expected one of {HASHES}")
