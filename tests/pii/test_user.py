"""Your own pii patterns (issue 28): a prefilter never stricter than the pattern, `regex` reading them as `re` does,
patterns that need no text refused, and a time budget per document."""

import random
import re

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from curate.pii import build_kinds, find_spans
from curate.pii.user import PatternTimeout, for_regex, problem, required_literal

import regex


def _edited(text: str, patterns: dict) -> list[str]:
    rows = find_spans(pa.array([text]), build_kinds([], patterns, {}, True, [])).to_pylist()
    return [text[r["start"]:r["end"]] for r in rows]


def test_a_pattern_where_re2_and_python_disagree_still_redacts():
    """RE2's `$` does not match before a final newline and its `{,3}` is literal: the old prefilter (the pattern
    itself, read by RE2) dropped these documents and nothing was redacted, without a word."""
    assert _edited("ref TICKET-123456\n", {"tk": "TICKET-[0-9]{6}$"}) == ["TICKET-123456"]
    assert _edited("code xxy here", {"x": "x{,3}y"}) == ["xxy"]
    assert _edited("Code: AB-12", {"c": "(?i)code: [a-z]{2}-[0-9]+"}) == ["Code: AB-12"]


PATTERNS = ["TICKET-[0-9]{6}$", "x{,3}y", r"a(?:bc)+d", r"(?:ab|cd)ef", r"(?i)AB(?-i:cd)", r"(?=ab)a\w", r"\bab\b",
            r"[ab]c{1,2}", r"(a)b\1", "a.b", r"(?s)a.*?c", r"(?m)^ab$", r"ab{0}c", "é+b", r"(?>ab|a)c", r"a++b", r"\u00e9b"]


def test_the_prefilter_is_never_stricter_than_the_pattern():
    """Every text where Python's `re` finds a match passes the prefilter (pyarrow over Arrow, as the stage runs it)."""
    rnd = random.Random(7)
    texts = ["".join(rnd.choice("abcdefxyéABCD\n ") for _ in range(rnd.randint(0, 12))) for _ in range(3000)]
    texts += ["ab\n", "abc\n", "TICKET-123456\n", "xxxy", "ABcd", "abab", "AC", "aéb"]
    array = pa.array(texts)
    for pattern in PATTERNS:
        kind = build_kinds([], {"p": pattern}, {}, True, [])[0]
        passed = pc.match_substring_regex(array, kind.prefilter).to_pylist() if kind.prefilter else [True] * len(texts)
        literal = required_literal(pattern)
        for text, ok in zip(texts, passed):
            for m in re.finditer(pattern, text):
                assert ok and literal in m.group(0), (pattern, text)


def test_the_literal_is_read_from_the_parse_tree():
    assert required_literal("TICKET-[0-9]{6}$") == "TICKET-"
    assert required_literal(r"(?:ab|cd)ef") == "ef", "not through an alternative"
    assert required_literal(r"(?i)ticket-\d+") == "", "case-insensitive: no literal"
    assert required_literal(r"(?i)ab(?-i:cd)") == "cd"
    assert required_literal(r"(?=secret)\w+") == "", "a look-around's text is not in the match"
    assert required_literal(r"x?abc") == "abc" and required_literal(r"(?:abc)?d") == "d"


@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("pattern", [r"foo{e<=1}", r"x{session}", r"[[:digit:]]+", r"a{,3}b", r"[]a]+", r"[^]a]+",
                                     "(?x) a {2} # a comment [with {e<=1}\n b", r"\{e<=1\}", r"id:[\d{]+"])
def test_regex_reads_the_pattern_as_re_does(pattern):
    """`regex` would read `{e<=1}` as a fuzzy match and `[[:digit:]]` as a POSIX class; escaped first, it finds what re does."""
    text = "foo fxo x{session} aab {abc} [:digit:]] 12 ]]a aa b aab {e<=1} id:1{2 fooo{e<=1}"
    want = [m.span() for m in re.finditer(pattern, text)]
    assert [m.span() for m in regex.finditer(for_regex(pattern), text, flags=regex.V0)] == want


@pytest.mark.parametrize("pattern", [r"\b", r"(?=a)", "a*", "(?:)", "x?", r"(?<=a)\B", "a|"])
def test_a_pattern_that_can_match_no_text_is_refused(pattern):
    assert "matches the empty string" in problem(pattern)


def test_a_pattern_that_needs_text_is_taken():
    assert problem(r"\bTICKET-\d{6}\b") is None and problem(r"(?=a)ab") is None
    assert problem("(unclosed").startswith("not a regular expression")


def test_a_runaway_pattern_stops_at_its_budget_and_names_the_document():
    texts = pa.array(["aab", "a" * 60 + "!", "ab ab"])
    kinds = build_kinds(["email"], {"slow": "(a|aa)+b"}, {}, True, [], timeout=0.05)
    timed_out: list = []
    rows = find_spans(texts, kinds, timed_out).to_pylist()
    assert timed_out == [(1, "slow", 0.05)]
    assert [(r["row"], r["start"], r["end"]) for r in rows] == [(0, 0, 3), (2, 0, 2), (2, 3, 5)], \
        "the others are scanned; the document past its budget gets no span"
    with pytest.raises(PatternTimeout, match="pattern 'slow' ran past its 0.05 s budget"):
        find_spans(texts, kinds)   # never skipped silently


def test_within_the_budget_the_matches_are_finditer_s():
    text = "TICKET-1 x TICKET-22 TICKET-333\nTICKET-4"
    kinds = build_kinds([], {"t": r"TICKET-\d+$", "u": r"(?m)TICKET-\d+$", "v": r"TICKET-\d+"}, {}, True, [])
    from curate.pii.find import matches

    for kind in kinds:
        assert kind.timeout == 1.0
        pattern = {"t": r"TICKET-\d+$", "u": r"(?m)TICKET-\d+$", "v": r"TICKET-\d+"}[kind.name]
        assert [m.span() for m in matches(kind, text)] == [m.span() for m in re.finditer(pattern, text)]
