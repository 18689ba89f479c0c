"""UTF-8 inside numba kernels: decoding (both signal kernels walk Arrow's UTF-8 buffer byte by byte) and comparing
byte runs in place (the hash-table probes of the signal and language-id kernels)."""

import numba as nb
import numpy as np


@nb.njit(cache=True, inline="always")
def decode(data, p, end):
    """Code point at byte ``p`` and the byte width (malformed bytes read as U+FFFD)."""
    b0 = np.int64(data[p])
    if b0 < 0x80:
        return b0, 1
    if b0 >= 0xF0 and p + 3 < end:
        cp = ((b0 & 0x07) << 18) | ((np.int64(data[p + 1]) & 0x3F) << 12) | (
            (np.int64(data[p + 2]) & 0x3F) << 6) | (np.int64(data[p + 3]) & 0x3F)
        return (cp, 4) if cp < 0x110000 else (0xFFFD, 4)
    if b0 >= 0xE0 and b0 < 0xF0 and p + 2 < end:
        return ((b0 & 0x0F) << 12) | ((np.int64(data[p + 1]) & 0x3F) << 6) | (np.int64(data[p + 2]) & 0x3F), 3
    if b0 >= 0xC0 and b0 < 0xE0 and p + 1 < end:
        return ((b0 & 0x1F) << 6) | (np.int64(data[p + 1]) & 0x3F), 2
    return 0xFFFD, 1


@nb.njit(cache=True, inline="always")
def same_bytes(a, i, b, j, n):
    """Whether ``a[i:i + n]`` equals ``b[j:j + n]``, compared in place (no slice per probe)."""
    for k in range(n):
        if a[i + k] != b[j + k]:
            return False
    return True
