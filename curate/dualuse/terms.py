"""Blocklist term files: one term per line, normalised the way texts are matched."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

from ..errors import CurateError

#: bumped whenever matching semantics change, so fingerprints (and the stage's
#: cached results keyed by them) change with them
MATCH_SEMANTICS = "curate-blocklist-v1: casefold, substring, distinct terms"


def normalise_terms(terms: Iterable[str]) -> list[str]:
    """Strip, ``str.casefold`` and de-duplicate (first-seen order kept); blank terms are dropped."""
    out: dict[str, None] = {}
    for term in terms:
        if not isinstance(term, str):
            raise CurateError(f"blocklist term {term!r} is not a string")
        term = term.strip().casefold()
        if term:
            out.setdefault(term, None)
    return list(out)


def load_terms(path: str) -> list[str]:
    """Read a term file (local path or fsspec URI; UTF-8, a BOM is ignored).

    One term per line; lines whose first non-blank character is ``#`` are
    comments, blank lines are ignored (a ``#`` later in a line is part of the
    term). Terms are stripped, case-folded and de-duplicated in first-seen order.
    A missing, unreadable or term-less file is a :class:`CurateError` naming the path.
    """
    from ..io.fs import read_bytes

    try:
        raw = read_bytes(path)
    except FileNotFoundError:
        raise CurateError(f"blocklist term file {path}: not found") from None
    except (OSError, ValueError) as exc:
        raise CurateError(f"blocklist term file {path}: cannot read it ({exc})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CurateError(f"blocklist term file {path}: not UTF-8 (byte {exc.start})") from None
    terms = normalise_terms(line for line in text.split("\n") if not line.lstrip().startswith("#"))
    if not terms:
        raise CurateError(f"blocklist term file {path}: no terms (only blank lines and # comments)")
    return terms


def demo_terms_path() -> str:
    """The shipped demonstration list (beekeeping terms: a harmless stand-in, not a dual-use list)."""
    return str(Path(__file__).with_name("data") / "demo_terms.txt")


def fingerprint(terms: Iterable[str]) -> str:
    """sha256 hex of the normalised term *set* and the matching semantics.

    Order and duplicates do not matter (they change no result), case and
    surrounding spaces neither (they are normalised away).
    """
    canon = sorted(normalise_terms(terms))
    payload = json.dumps([MATCH_SEMANTICS, canon], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()
