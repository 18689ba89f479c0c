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
- ``datatrove_punct_to_space``: datatrove's ``PUNCTUATION`` table (ASCII punctuation, 34 CJK/typographic
  marks such as ``« » – — ’ “ ” … 、 。 「 」 ！ ？``, and the C0/C1 control characters except tab and
  newline) becomes a space: what datatrove's ``simplify_text`` does. The table is copied (datatrove 0.10,
  Apache-2.0) so the result does not depend on whether datatrove's text module (which needs the
  third-party ``regex`` package) imports.
- ``unicode_punct_to_space``: every Unicode punctuation character (categories P*), the ASCII symbols
  ``$+<=>^`|~`` and the characters of datatrove's table become a space (a broader variant).
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


# datatrove 0.10, datatrove/utils/text.py PUNCTUATION (what simplify_text maps to spaces)
DATATROVE_PUNCTUATION = (string.punctuation + "«´»–—’“”„…∶━►、。〈〉《》「」【】！％（），．１：；？～"
                         + "".join(chr(c) for a, b in ((0, 9), (11, 32), (127, 160)) for c in range(a, b)))


def _tables(chars: Iterable[int]) -> tuple[bytes, dict[int, str]]:
    """(256-byte table for the ASCII part, dict for the rest) mapping ``chars`` to a space."""
    chars = set(chars)
    ascii_table = bytes(0x20 if c in chars else c for c in range(128)) + bytes(range(128, 256))
    return ascii_table, {c: " " for c in chars if c >= 128}


@lru_cache(maxsize=1)
def _datatrove_tables():
    return _tables(map(ord, DATATROVE_PUNCTUATION))


@lru_cache(maxsize=1)
def _unicode_tables():
    chars = set(map(ord, DATATROVE_PUNCTUATION + "$+<=>^`|~"))
    chars.update(c for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)).startswith("P"))
    return _tables(chars)


def _to_space(text: str, tables) -> str:
    ascii_table, rest = tables
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
    "datatrove_punct_to_space": lambda t: _to_space(t, _datatrove_tables()),
    "unicode_punct_to_space": lambda t: _to_space(t, _unicode_tables()),
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
