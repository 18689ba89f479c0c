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

_WS = re.compile(r"\s+")
_NUMBERS = re.compile(r"\d+(?:[.,،٫⎖⎗⎘]\d+)?")
_DEL_ASCII_PUNCT = str.maketrans("", "", string.punctuation)
_ASCII_PUNCT_TO_SPACE = str.maketrans(string.punctuation, " " * len(string.punctuation))


@lru_cache(maxsize=1)
def _punct_to_space_table() -> dict[int, str]:
    extra = "$+<=>^`|~►━∶"
    controls = [c for a, b in ((0, 9), (11, 13), (13, 32), (127, 160)) for c in range(a, b)]
    table = {c: " " for c in controls}
    for c in map(ord, extra):
        table[c] = " "
    for c in range(sys.maxunicode + 1):
        if unicodedata.category(chr(c)).startswith("P"):
            table[c] = " "
    return table


def _strip_accents(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")


STEPS: dict[str, Callable[[str], str]] = {
    "nfc": lambda t: unicodedata.normalize("NFC", t),
    "nfd": lambda t: unicodedata.normalize("NFD", t),
    "nfkc": lambda t: unicodedata.normalize("NFKC", t),
    "nfkd": lambda t: unicodedata.normalize("NFKD", t),
    "lower": str.lower,
    "del_ascii_punct": lambda t: t.translate(_DEL_ASCII_PUNCT),
    "ascii_punct_to_space": lambda t: t.translate(_ASCII_PUNCT_TO_SPACE),
    "punct_to_space": lambda t: t.translate(_punct_to_space_table()),
    "digits_to_0": lambda t: _NUMBERS.sub("0", t),
    "strip_accents": _strip_accents,
    "collapse_ws": lambda t: _WS.sub(" ", t.strip()),
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
