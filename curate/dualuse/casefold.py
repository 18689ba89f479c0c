"""Python's ``str.casefold`` as flat per-code-point arrays, for compiled kernels.

``str.casefold`` is full Unicode case folding applied to each character on its
own (no context, unlike ``str.lower`` and the Greek final sigma), so folding a
text character by character with these arrays gives exactly ``text.casefold()``.
Most characters fold to one character; about a hundred expand to two or three
(``"ß"`` -> ``"ss"``, ``"ﬃ"`` -> ``"ffi"``, ``"İ"`` -> ``"i̇"``), so a folded
text can be longer than the original: the kernels never need offsets into the
folded text, only which terms occur in it.

The arrays come from the running interpreter (built lazily, about 0.2 s, cached
for the life of the process), so they follow its Unicode version exactly like
``text.casefold()`` in reference code would.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

N_CODEPOINTS = 0x110000


@dataclass(frozen=True)
class FoldTable:
    """``single[cp]``: the folded code point when ``cp`` folds to one character,
    else ``-(k + 1)``: the fold is ``data[offsets[k]:offsets[k + 1]]``.
    Surrogates (never produced by a UTF-8 decoder) map to themselves."""

    single: np.ndarray  # int32, N_CODEPOINTS
    offsets: np.ndarray  # int64
    data: np.ndarray  # int32 code points


@lru_cache(maxsize=1)
def fold_table() -> FoldTable:
    cps = np.arange(N_CODEPOINTS, dtype=np.int32)
    cps = cps[(cps < 0xD800) | (cps >= 0xE000)]
    chars = cps.astype("<u4").tobytes().decode("utf-32-le")
    folded = [c.casefold() for c in chars]
    lengths = np.fromiter(map(len, folded), dtype=np.int64, count=len(folded))
    flat = np.frombuffer("".join(folded).encode("utf-32-le"), dtype="<u4").astype(np.int32)
    starts = np.zeros(len(folded) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])

    single = np.arange(N_CODEPOINTS, dtype=np.int32)  # identity, surrogates included
    one = lengths == 1
    single[cps[one]] = flat[starts[:-1][one]]
    multi = np.flatnonzero(~one)
    single[cps[multi]] = -(np.arange(len(multi), dtype=np.int32) + 1)
    offsets = np.zeros(len(multi) + 1, dtype=np.int64)
    np.cumsum(lengths[multi], out=offsets[1:])
    data = np.concatenate([flat[starts[i]:starts[i + 1]] for i in multi]) if len(multi) else np.zeros(0, np.int32)
    return FoldTable(single, offsets, data.astype(np.int32))
