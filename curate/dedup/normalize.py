"""Text normalisation before shingling, as named steps applied in the order given.

Why named, ordered steps rather than flags: each recipe normalises in its own order (Zyda-1: NFC first;
RedPajama-V2: NFD last; datatrove: lowercase, digits, punctuation, whitespace, then accents), and the
order changes results on some texts. A preset lists its steps; the same function serves the Python
reference shingler and the batch path, so both see exactly the same text.

Steps:
- ``nfc`` ``nfd`` ``nfkc`` ``nfkd``: ``unicodedata.normalize``.
- ``lower``: ``str.lower``.
- ``del_ascii_punct``: delete ``string.punctuation`` (Zyda-1, RedPajama-V2).
- ``ascii_punct_to_space``: replace ``string.punctuation`` with spaces.
- ``punct_to_space``: datatrove-style: every Unicode punctuation character (categories P*), the ASCII
  symbols ``$+<=>^`|~``, a few symbols datatrove lists (``► ━ ∶``) and control characters become a space.
  An approximation of datatrove's hand-made table (its module needs the third-party ``regex`` package).
- ``digits_to_0``: each run of decimal digits (any script, ``\\d`` = Unicode Nd), with an optional
  decimal part, becomes ``0`` (datatrove's ``norm_numbers``).
- ``strip_accents``: NFD, then drop combining marks (Mn) (datatrove's ``norm_unicode_diacritics``).
- ``collapse_ws``: strip, and each run of whitespace (``\\s``) becomes one space.
"""

from __future__ import annotations

import re
import string
import sys
import unicodedata
from functools import lru_cache
from typing import Callable, Iterable

_NUMBERS = re.compile(r"\d+(?:[.,،٫⎖⎗⎘]\d+)?")
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_ASCII_PUNCT = string.punctuation.encode()
_ASCII_PUNCT_TO_SPACE = bytes(0x20 if chr(c) in string.punctuation else c for c in range(256))

# Speed notes (per 3.6 kB web page): str.translate with a dict and per-character generators cost
# ~200-300 us; UTF-8 bytes.translate is ~20 us and is exact for ASCII-only tables (bytes < 0x80 never
# occur inside a multi-byte UTF-8 sequence); non-ASCII runs are handled separately and only when present.


@lru_cache(maxsize=1)
def _punct_to_space_tables() -> tuple[bytes, dict[int, str]]:
    """(256-byte table for the ASCII part, dict for the rest): punctuation, a few symbols, controls."""
    chars = {c for a, b in ((0, 9), (11, 13), (13, 32), (127, 160)) for c in range(a, b)}
    chars.update(map(ord, "$+<=>^`|~►━∶"))
    chars.update(c for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)).startswith("P"))
    ascii_table = bytes(0x20 if c in chars else c for c in range(128)) + bytes(range(128, 256))
    return ascii_table, {c: " " for c in chars if c >= 128}


def _punct_to_space(text: str) -> str:
    ascii_table, rest = _punct_to_space_tables()
    text = text.encode("utf-8").translate(ascii_table).decode("utf-8")
    if text.isascii():
        return text
    return _NON_ASCII.sub(lambda m: m.group().translate(rest), text)


def _drop_marks(run: str) -> str:
    return "".join(c for c in run if unicodedata.category(c) != "Mn")


def _strip_accents(text: str) -> str:
    text = unicodedata.normalize("NFD", text)
    if text.isascii():
        return text
    return _NON_ASCII.sub(lambda m: _drop_marks(m.group()), text)


STEPS: dict[str, Callable[[str], str]] = {
    "nfc": lambda t: unicodedata.normalize("NFC", t),
    "nfd": lambda t: unicodedata.normalize("NFD", t),
    "nfkc": lambda t: unicodedata.normalize("NFKC", t),
    "nfkd": lambda t: unicodedata.normalize("NFKD", t),
    "lower": str.lower,
    "del_ascii_punct": lambda t: t.encode("utf-8").translate(None, _ASCII_PUNCT).decode("utf-8"),
    "ascii_punct_to_space": lambda t: t.encode("utf-8").translate(_ASCII_PUNCT_TO_SPACE).decode("utf-8"),
    "punct_to_space": _punct_to_space,
    "digits_to_0": lambda t: _NUMBERS.sub("0", t),
    "strip_accents": _strip_accents,
    # same as re.sub(r"\s+", " ", t.strip()): str.split and re's \s use the same whitespace set
    "collapse_ws": lambda t: " ".join(t.split()),
}


def check_steps(steps: Iterable[str]) -> tuple[str, ...]:
    """The steps as a tuple; ValueError naming any unknown step."""
    steps = tuple(steps)
    unknown = [s for s in steps if s not in STEPS]
    if unknown:
        raise ValueError(f"unknown normalisation step(s) {unknown}; expected some of {sorted(STEPS)}")
    return steps


@lru_cache(maxsize=64)
def _normalizer(steps: tuple[str, ...]) -> Callable[[str], str]:
    funcs = [STEPS[s] for s in steps]
    if not funcs:
        return lambda t: t

    def apply(text: str) -> str:
        for f in funcs:
            text = f(text)
        return text

    return apply


def normalizer(steps: Iterable[str]) -> Callable[[str], str]:
    """One function applying ``steps`` in order (identity for no steps); cached per step tuple."""
    return _normalizer(check_steps(steps))
