"""Writes ``data/dtwords_tables.json``: spaCy's blank-English tokenizer rules and datatrove's character sets as data.

datatrove's Gopher and FineWeb filters split words with spaCy's blank English tokenizer
(``split_into_words``). :mod:`curate.signals.dtwords` reimplements that tokenizer's algorithm in a
compiled kernel; the rules themselves (which characters are prefixes, suffixes and infixes, the 1,347
tokenizer exceptions such as ``Mr.`` or ``don't`` -> ``do`` ``n't``) are read here from spaCy's own
compiled regexes and tables, per code point, so the kernel needs neither spaCy nor datatrove at run time.

Needs spaCy and datatrove (the ``test`` extra). Regenerate after upgrading either::

    python -m curate.signals.dtwords_build        # rewrites curate/signals/data/dtwords_tables.json

``tests/signals/test_parity_datatrove.py`` checks that the shipped tables equal a fresh build where both are installed;
:mod:`.dtwords_data` loads them.
spaCy is MIT-licensed (Explosion AI), datatrove Apache-2.0 (Hugging Face).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from .dtwords_kernel import LB_DEGREE, LB_DIGIT, LB_DOTPRE, LB_NONE, LB_TWO_UPPER  # the suffix look-behinds

N_CODEPOINTS = 0x110000


def _chars(codepoints=None):
    cps = range(N_CODEPOINTS) if codepoints is None else codepoints
    return [chr(c) for c in cps if not 0xD800 <= c < 0xE000]


def _ranges(codepoints) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for c in sorted(codepoints):
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return [tuple(r) for r in out]


def _unescape(piece: str) -> str:
    return re.sub(r"\\(.)", r"\1", piece)


def build(codepoints=None) -> dict:
    """The tables; `codepoints`: compute the character classes over these code points only (a quick check)."""
    from importlib.metadata import version

    import spacy
    from datatrove.pipeline.filters.gopher_quality_filter import STOP_WORDS
    from datatrove.utils.text import PUNCTUATION_SET
    from spacy.lang import char_classes as cc
    from spacy.lang.en import English
    from spacy.tokenizer import Tokenizer

    nlp = spacy.blank("en")
    tok = nlp.tokenizer
    chars = _chars(codepoints)
    inside = {ord(c) for c in chars}

    def cls(pattern: str) -> set[int]:
        rx = re.compile(pattern)
        return {ord(c) for c in chars if rx.fullmatch(c)}

    # --- prefixes: '^p1|^p2|...', the first alternative that matches at 0 --------------------------------
    prefixes = [p for p in English.Defaults.prefixes if p.strip()]  # spaCy drops blank rules
    pre1 = {ord(c) for c in chars if (m := tok.prefix_search(c)) and m.end() == 1}
    pre1.discard(ord("+"))  # r"\+(?![0-9])": the kernel checks the next character
    multi_prefix = []
    for piece in prefixes:
        if piece in (r"\.\.+", r"\+(?![0-9])") or piece.startswith("["):
            continue
        lit = _unescape(piece)
        if len(lit) > 1 and ord(lit[0]) not in pre1:
            multi_prefix.append(lit)
    assert sorted(multi_prefix) == ["A$", "C$", "US$"], multi_prefix

    # --- suffixes: 'p1$|p2$|...' searched: the leftmost start wins ----------------------------------------
    suffixes = [p for p in English.Defaults.suffixes if p.strip()]
    suf1 = {ord(c) for c in chars if (m := tok.suffix_search(c)) and m.span() == (0, 1)}
    literals: list[tuple[str, int]] = []
    dotpre_piece = two_upper_piece = None
    for piece in suffixes:
        if piece == r"\.\.+":
            continue
        if piece.startswith("(?<=[0-9])(?:"):
            literals += [(_unescape(x), LB_DIGIT) for x in piece[len("(?<=[0-9])(?:"):-1].split("|")]
        elif piece == r"(?<=[0-9])\+":
            literals.append(("+", LB_DIGIT))
        elif piece == r"(?<=°[FfCcKk])\.":
            literals.append((".", LB_DEGREE))
        elif piece.startswith("(?<=[0-9a-z"):
            dotpre_piece = piece
            literals.append((".", LB_DOTPRE))
        elif piece.startswith("(?<=[A-Z"):
            two_upper_piece = piece
            literals.append((".", LB_TWO_UPPER))
        elif piece.startswith("[") and piece.endswith("]"):
            assert cls(piece) <= suf1, piece[:40]  # a context-free class of single characters
        elif piece.startswith("[") or piece.startswith("(?"):
            raise AssertionError(f"unexpected suffix rule {piece[:40]}")
        else:
            lit = _unescape(piece)
            if len(lit) > 1:
                literals.append((lit, LB_NONE))
            else:
                assert ord(lit) in suf1 or ord(lit) not in inside, lit
    assert dotpre_piece and two_upper_piece
    literals = sorted(set(literals))
    dotpre = {ord(c) for c in chars if re.search(dotpre_piece + "$", c + ".")}
    au = {ord(c) for c in chars if re.search(two_upper_piece + "$", c + c + ".")}

    # --- infixes (English): finditer over the alternatives, in this order ---------------------------------
    infixes = [p for p in English.Defaults.infixes if p.strip()]
    assert infixes[:2] == [r"\.\.+", "…"] and infixes[2].startswith("[") and len(infixes) == 8, infixes[:2]
    icon = cls(infixes[2])
    assert infixes[3] == r"(?<=[0-9])[+\-\*^](?=[0-9-])"
    dot_rule = re.compile(infixes[4])
    lq = {ord(c) for c in chars if dot_rule.search(c + ".A")}
    uq = {ord(c) for c in chars if dot_rule.search("a." + c)}
    alpha = {ord(c) for c in chars if re.search(infixes[5], c + ",a") and re.search(infixes[5], "a," + c)}
    hyphen_rule = infixes[6]
    alnum = {ord(c) for c in chars if re.search(hyphen_rule, c + "-a")}
    hyphens = hyphen_rule.split("(?:", 1)[1].split(")(?=", 1)[0].split("|")
    assert hyphens == ["-", "–", "—", "--", "---", "——", "~"], hyphens
    assert alpha == {ord(c) for c in chars if re.search(hyphen_rule, "a-" + c)}
    assert infixes[7].endswith("[:<>=/](?=[" + cc.ALPHA + "])")
    assert alnum == {ord(c) for c in chars if re.search(infixes[7], c + ":a")}

    # --- URL match: the TLD class; the rest of the pattern is written out in the kernel --------------------
    tld = cls("[" + cc.ALPHA_LOWER + "]")
    assert "(?:[" + cc.ALPHA_LOWER + "]{2,63})" in tok.url_match.__self__.pattern

    # --- tokenizer exceptions and the ones the special-case matcher re-merges after affix splitting -------
    from spacy.symbols import ORTH

    specials = {s: [d[ORTH] for d in v] for s, v in sorted(tok.rules.items())}
    bare = Tokenizer(nlp.vocab, rules={}, prefix_search=tok.prefix_search, suffix_search=tok.suffix_search,
                     infix_finditer=tok.infix_finditer, token_match=tok.token_match, url_match=tok.url_match)
    matcher = {}
    for s in specials:
        if tok.find_prefix(s) or tok.find_infix(s) or tok.find_suffix(s) or " " in s:
            matcher[s] = [t.text for t in bare(s)]

    return {
        "versions": {"spacy": spacy.__version__, "datatrove": version("datatrove")},
        "classes": {
            "PRE1": _ranges(pre1), "SUF1": _ranges(suf1), "ICON": _ranges(icon), "LQ": _ranges(lq), "UQ": _ranges(uq),
            "ALPHA": _ranges(alpha), "ALNUM": _ranges(alnum), "TLD": _ranges(tld), "DOTPRE": _ranges(dotpre),
            "AU": _ranges(au), "PUNCT": _ranges(ord(c) for c in PUNCTUATION_SET if len(c) == 1),
        },
        "multi_prefix": sorted(multi_prefix),
        "suffix_literals": literals,
        "specials": specials,
        "matcher": matcher,
        "stop_words": sorted(STOP_WORDS),
    }


def render(data: dict) -> str:
    """The tables as compact JSON, one top-level key a line (small diffs when spaCy or datatrove change)."""
    lines = [f"{json.dumps(key)}: {json.dumps(value, ensure_ascii=False, separators=(',', ':'))}" for key, value in data.items()]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def main() -> int:
    out = Path(__file__).with_name("data") / "dtwords_tables.json"
    out.write_text(render(build()), encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
