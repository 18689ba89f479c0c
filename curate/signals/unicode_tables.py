"""Per-code-point lookup tables that reproduce Python's own str semantics.

Why: RPv2 defines its signals through Python string methods (``str.isupper``,
``str.isspace``, ``str.isnumeric``, ``str.lower``, ``unicodedata.normalize``) and
the ``re`` module (``\\w``, ``\\s``). Compiled kernels cannot call those, so we
ask this interpreter once per process for every code point and keep the answers
in flat arrays. The tables therefore follow whatever Unicode version the running
Python ships, exactly like the reference code would.

Built lazily (about 0.3 s) and cached for the life of the process.
"""

from __future__ import annotations

import string
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

#: flag bits in :attr:`UnicodeTables.flags` (the kernels compile these values in:
#: after changing one, delete curate/signals/__pycache__ so they recompile)
SPACE = 1  # str.isspace() == re ``\s`` == what str.split()/strip() remove
WORD = 2  # re ``\w``: str.isalnum() or "_"
UPPER = 4  # Py_UNICODE_ISUPPER: single-char str.isupper()
LOWER_OR_TITLE = 8  # a char that makes a multi-char str.isupper() False
NUMERIC = 16  # str.isnumeric()

#: code point of GREEK CAPITAL SIGMA: its lowercase depends on context
#: (final sigma), so documents containing it are normalised by Python itself.
CAPITAL_SIGMA = 0x03A3

N_CODEPOINTS = 0x110000


@dataclass(frozen=True)
class UnicodeTables:
    """Flat arrays indexed by code point (surrogates are never looked up)."""

    flags: np.ndarray  # uint8, bits above
    nfd_lower: np.ndarray  # int32: NFD(lower(c)) if one char, else -(k+1): index into exp_off
    exp_off: np.ndarray  # int64 offsets into exp_data for multi-char expansions
    exp_data: np.ndarray  # int32 code points of multi-char expansions
    ccc: np.ndarray  # uint8 canonical combining class (for NFD reordering)
    punct: np.ndarray  # uint8, 1 for ASCII string.punctuation (removed before lowercasing)


def _all_chars() -> tuple[np.ndarray, str]:
    cps = np.arange(N_CODEPOINTS, dtype=np.uint32)
    cps = cps[(cps < 0xD800) | (cps >= 0xE000)]
    return cps, cps.astype("<u4").tobytes().decode("utf-32-le")


def _flags(cps: np.ndarray, chars: str) -> np.ndarray:
    def prop(fn) -> np.ndarray:
        return np.fromiter(map(fn, chars), dtype=bool, count=len(chars))

    upper = prop(str.isupper)  # one char: Py_UNICODE_ISUPPER
    # one char: islower() is Py_UNICODE_ISLOWER, istitle() is ISTITLE or ISUPPER
    kill = prop(str.islower) | (prop(str.istitle) & ~upper)
    bits = (
        prop(str.isspace) * SPACE
        | (prop(str.isalnum) * WORD)
        | (upper * UPPER)
        | (kill * LOWER_OR_TITLE)
        | (prop(str.isnumeric) * NUMERIC)
    ).astype(np.uint8)
    flags = np.zeros(N_CODEPOINTS, dtype=np.uint8)
    flags[cps] = bits
    flags[ord("_")] |= WORD
    return flags


def _nfd_lower(cps: np.ndarray, chars: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # "\x00" separates the characters: it is a starter (NFD never reorders across
    # it) and neither cased nor case-ignorable (so capital sigma gets its
    # non-final form, the one used outside words; documents that contain it
    # are normalised by Python anyway).
    body = cps[1:]  # drop "\x00" itself; it maps to itself
    joined = np.zeros((len(body), 2), dtype="<u4")
    joined[:, 0] = body
    text = joined.reshape(-1)[:-1].tobytes().decode("utf-32-le")  # c0 \x00 c1 \x00 ...
    mapped = unicodedata.normalize("NFD", text.lower())
    arr = np.frombuffer(mapped.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
    seps = np.flatnonzero(arr == 0)
    starts = np.concatenate(([0], seps + 1))
    ends = np.concatenate((seps, [len(arr)]))
    if len(starts) != len(body):
        raise RuntimeError("unexpected NUL produced by lower()/NFD")
    lengths = ends - starts
    table = np.arange(N_CODEPOINTS, dtype=np.int64)
    single = lengths == 1
    table[body[single]] = arr[starts[single]]
    multi = np.flatnonzero(~single)
    exp_off = np.zeros(len(multi) + 1, dtype=np.int64)
    exp_off[1:] = np.cumsum(lengths[multi])
    # gather the multi-char expansions without a Python loop
    within = np.arange(exp_off[-1]) - np.repeat(exp_off[:-1], lengths[multi])
    exp_data = arr[np.repeat(starts[multi], lengths[multi]) + within]
    table[body[multi]] = -(np.arange(len(multi), dtype=np.int64) + 1)
    # the words kernel sizes its buffer as 2 code points per UTF-8 byte
    utf8_len = np.where(body < 0x80, 1, np.where(body < 0x800, 2, np.where(body < 0x10000, 3, 4)))
    if (lengths > 2 * utf8_len).any():
        raise RuntimeError("lower()/NFD expands a character beyond 2 code points per UTF-8 byte")
    return table.astype(np.int32), exp_off, exp_data.astype(np.int32)


@lru_cache(maxsize=1)
def get_tables() -> UnicodeTables:
    """The process-wide tables (built on first use)."""
    cps, chars = _all_chars()
    flags = _flags(cps, chars)
    nfd_lower, exp_off, exp_data = _nfd_lower(cps, chars)
    ccc = np.zeros(N_CODEPOINTS, dtype=np.uint8)
    ccc[cps] = np.fromiter(map(unicodedata.combining, chars), dtype=np.uint8, count=len(chars))
    punct = np.zeros(128, dtype=np.uint8)
    punct[[ord(c) for c in string.punctuation]] = 1
    return UnicodeTables(flags, nfd_lower, exp_off, exp_data, ccc, punct)
