"""RPv2 quality signals: hand-computed values, and a cross-check against a slow,
literal reimplementation of the specification (``reference_signals`` below,
written from shared/reference/rpv2-signals.md and RPv2 ``app/src/core``)."""

from __future__ import annotations

import glob
import gzip
import json
import math
import random
import re
import string
import unicodedata
from collections import Counter
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.signals import (
    DOC_SIGNALS,
    LINE_SIGNALS,
    compute_signals,
    ldnoobw_words,
    signals_schema,
    stop_words,
)
from curate.signals.rounding import py_round
from curate.signals.unicode_tables import LOWER_OR_TITLE, NUMERIC, SPACE, UPPER, WORD, get_tables

SHARED_DOLMA = Path(__file__).resolve().parents[3] / "shared" / "data" / "dolma" / "formats"

# ---------------------------------------------------------------------------
# Reference implementation: one regex / loop per signal, Python round().
# ---------------------------------------------------------------------------
_PUNCT = str.maketrans("", "", string.punctuation)
_WORDPUNCT = re.compile(r"\w+|[^\w\s]+")  # nltk WordPunctTokenizer
_LINES = re.compile(r"([^\n]*\n|[^\n]+$)")
_SENT = re.compile(r"\b[^.!?]+[.!?]*", flags=re.UNICODE)
_ALPHA = re.compile(r"[a-zA-Z]")
_LOREM = re.compile(r"lorem ipsum", re.IGNORECASE)
_BULLETS = ("\u2022", "\u2023", "\u25B6", "\u25C0", "\u25E6", "\u25A0", "\u25A1", "\u25AA", "\u25AB", "\u2013")


def normalize(text: str) -> str:
    text = text.translate(_PUNCT).lower().strip()
    text = re.sub(r"\s+", " ", text)
    return unicodedata.normalize("NFD", text)


def _ngrams(seq, n):
    return [tuple(seq[i:i + n]) for i in range(len(seq) - n + 1)]


def reference_signals(text: str, stop: frozenset, bad: frozenset) -> dict:
    r = lambda x: round(x, 8)  # noqa: E731
    norm = normalize(text)
    raw_lines = [m.group(0) for m in _LINES.finditer(text)]
    norm_lines = [normalize(line) for line in raw_lines]
    raw_words = _WORDPUNCT.findall(text)
    words = norm.split()
    n_raw, n_norm = len(raw_words), len(words)
    out = {}
    out["rps_doc_word_count"] = n_norm
    out["rps_doc_mean_word_length"] = None if n_norm == 0 else r(float(sum(map(len, words))) / n_norm)
    out["rps_doc_num_sentences"] = float(len(_SENT.findall(text)))
    out["rps_doc_symbol_to_word_ratio"] = (
        None if n_raw == 0 else r(float(sum(text.count(x) for x in ("#", "...", "…"))) / n_raw))
    out["rps_doc_frac_lines_end_with_ellipsis"] = (
        None if not raw_lines
        else r(float(sum(line.rstrip().endswith(("...", "…")) for line in raw_lines)) / len(raw_lines)))
    out["rps_doc_frac_no_alph_words"] = (
        None if n_raw == 0 else r(1.0 - float(sum(_ALPHA.search(w) is not None for w in raw_words)) / n_raw))
    out["rps_doc_frac_unique_words"] = None if n_norm == 0 else r(float(len(set(words))) / n_norm)
    if n_norm == 0:
        out["rps_doc_unigram_entropy"] = None
    else:
        counter = Counter(words)
        total = sum(counter.values())
        out["rps_doc_unigram_entropy"] = r(sum(-x / total * math.log(x / total) for x in counter.values()))
    out["rps_doc_frac_all_caps_words"] = None if n_raw == 0 else r(float(sum(map(str.isupper, raw_words))) / n_raw)
    out["rps_doc_stop_word_fraction"] = 0.0 if n_norm == 0 else r(float(sum(w in stop for w in raw_words)) / n_raw)
    if len(norm) == 0 or "lorem ipsum" not in norm:
        out["rps_doc_lorem_ipsum"] = 0.0
    else:
        out["rps_doc_lorem_ipsum"] = r(float(len(_LOREM.findall(norm))) / len(norm))
    if len(text) == 0 or ("{" not in text and "}" not in text):
        out["rps_doc_curly_bracket"] = 0.0
    else:
        out["rps_doc_curly_bracket"] = r(float(text.count("{") + text.count("}")) / len(text))
    if len(norm) == 0:
        out["rps_doc_ldnoobw_words"] = 0.0
    else:
        dirty = 0
        for n in {1 + w.count(" ") for w in bad}:
            grams = words if n == 1 else [" ".join(t) for t in _ngrams(words, n)]
            dirty += sum(1 for g in grams if g in bad)
        out["rps_doc_ldnoobw_words"] = float(dirty)
    total_chars = sum(len(w) for w in words)
    for n in (2, 3, 4):
        top = Counter(_ngrams(words, n)).most_common(1)
        if not top or top[0][1] <= 1:
            out[f"rps_doc_frac_chars_top_{n}gram"] = 0.0
        else:
            gram, count = top[0]
            out[f"rps_doc_frac_chars_top_{n}gram"] = r(sum(len(w) for w in gram) * count / total_chars)
    for n in range(5, 11):
        if n_norm < n:
            out[f"rps_doc_frac_chars_dupe_{n}grams"] = 0.0
            continue
        grams = _ngrams(words, n)
        dupes = {g for g, c in Counter(grams).items() if c > 1}
        covered = np.zeros(n_norm, dtype=int)
        for i, g in enumerate(grams):
            if g in dupes:
                covered[i:i + n] = 1
        lengths = np.array([len(w) for w in words])
        out[f"rps_doc_frac_chars_dupe_{n}grams"] = r(float(np.sum(lengths * covered) / np.sum(lengths)))
    out["rps_lines_num_words"] = [float(len(line.split())) for line in norm_lines]
    out["rps_lines_numerical_chars_fraction"] = [
        0.0 if len(line) == 0 else r(sum(map(str.isnumeric, line)) / len(line)) for line in norm_lines]
    out["rps_lines_uppercase_letter_fraction"] = [r(sum(map(str.isupper, line)) / len(line)) for line in raw_lines]
    out["rps_lines_start_with_bulletpoint"] = (
        [None] if not raw_lines else [float(line.lstrip().startswith(_BULLETS)) for line in raw_lines])
    out["rps_lines_ending_with_terminal_punctution_mark"] = [
        float(line.rstrip().endswith((".", "!", "?", "”"))) for line in raw_lines]
    out["rps_lines_javascript_counts"] = [
        float(sum(1 for w in line.split() if w == "javascript")) for line in norm_lines]
    return out


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def one(text: str, **kw) -> dict:
    return compute_signals(pa.array([text]), **kw).to_pylist()[0]


def _close(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= 1e-8


def assert_matches(got: dict, expected: dict, text: str = "") -> None:
    for name, want in expected.items():
        have = got[name]
        if isinstance(want, list):
            ok = have is not None and len(have) == len(want) and all(_close(a, b) for a, b in zip(have, want))
        else:
            ok = _close(have, want)
        assert ok, f"{name}: got {have!r}, expected {want!r} for {text[:120]!r}"


ZERO_REPETITION = {f"rps_doc_frac_chars_top_{n}gram": 0.0 for n in (2, 3, 4)} | {
    f"rps_doc_frac_chars_dupe_{n}grams": 0.0 for n in range(5, 11)}


# ---------------------------------------------------------------------------
# hand-computed values
# ---------------------------------------------------------------------------
def test_empty_text():
    assert one("") == {
        "rps_doc_word_count": 0, "rps_doc_mean_word_length": None, "rps_doc_num_sentences": 0.0,
        "rps_doc_symbol_to_word_ratio": None, "rps_doc_frac_lines_end_with_ellipsis": None,
        "rps_doc_frac_no_alph_words": None, "rps_doc_frac_unique_words": None, "rps_doc_unigram_entropy": None,
        "rps_doc_frac_all_caps_words": None, "rps_doc_stop_word_fraction": 0.0, "rps_doc_lorem_ipsum": 0.0,
        "rps_doc_curly_bracket": 0.0, "rps_doc_ldnoobw_words": 0.0, **ZERO_REPETITION,
        "rps_lines_num_words": [], "rps_lines_numerical_chars_fraction": [],
        "rps_lines_uppercase_letter_fraction": [], "rps_lines_start_with_bulletpoint": [None],
        "rps_lines_ending_with_terminal_punctution_mark": [], "rps_lines_javascript_counts": [],
    }


def test_only_whitespace():
    # lines: " \t\n" and "  " (the last one has no newline)
    assert one(" \t\n  ") == {
        "rps_doc_word_count": 0, "rps_doc_mean_word_length": None, "rps_doc_num_sentences": 0.0,
        "rps_doc_symbol_to_word_ratio": None, "rps_doc_frac_lines_end_with_ellipsis": 0.0,
        "rps_doc_frac_no_alph_words": None, "rps_doc_frac_unique_words": None, "rps_doc_unigram_entropy": None,
        "rps_doc_frac_all_caps_words": None, "rps_doc_stop_word_fraction": 0.0, "rps_doc_lorem_ipsum": 0.0,
        "rps_doc_curly_bracket": 0.0, "rps_doc_ldnoobw_words": 0.0, **ZERO_REPETITION,
        "rps_lines_num_words": [0.0, 0.0], "rps_lines_numerical_chars_fraction": [0.0, 0.0],
        "rps_lines_uppercase_letter_fraction": [0.0, 0.0], "rps_lines_start_with_bulletpoint": [0.0, 0.0],
        "rps_lines_ending_with_terminal_punctution_mark": [0.0, 0.0], "rps_lines_javascript_counts": [0.0, 0.0],
    }


def test_one_word():
    assert one("Hello") == {
        "rps_doc_word_count": 1, "rps_doc_mean_word_length": 5.0, "rps_doc_num_sentences": 1.0,
        "rps_doc_symbol_to_word_ratio": 0.0, "rps_doc_frac_lines_end_with_ellipsis": 0.0,
        "rps_doc_frac_no_alph_words": 0.0, "rps_doc_frac_unique_words": 1.0, "rps_doc_unigram_entropy": 0.0,
        "rps_doc_frac_all_caps_words": 0.0, "rps_doc_stop_word_fraction": 0.0, "rps_doc_lorem_ipsum": 0.0,
        "rps_doc_curly_bracket": 0.0, "rps_doc_ldnoobw_words": 0.0, **ZERO_REPETITION,
        "rps_lines_num_words": [1.0], "rps_lines_numerical_chars_fraction": [0.0],
        "rps_lines_uppercase_letter_fraction": [0.2], "rps_lines_start_with_bulletpoint": [0.0],
        "rps_lines_ending_with_terminal_punctution_mark": [0.0], "rps_lines_javascript_counts": [0.0],
    }


def test_two_lines_no_trailing_newline():
    # raw words: The cat sat . the cat ran ! ; normalised: the cat sat the cat ran
    got = one("The cat sat.\nthe cat ran!")
    assert got == {
        "rps_doc_word_count": 6, "rps_doc_mean_word_length": 3.0, "rps_doc_num_sentences": 2.0,
        "rps_doc_symbol_to_word_ratio": 0.0, "rps_doc_frac_lines_end_with_ellipsis": 0.0,
        "rps_doc_frac_no_alph_words": 0.25, "rps_doc_frac_unique_words": 0.66666667,
        "rps_doc_unigram_entropy": 1.32966135, "rps_doc_frac_all_caps_words": 0.0,
        "rps_doc_stop_word_fraction": 0.125, "rps_doc_lorem_ipsum": 0.0, "rps_doc_curly_bracket": 0.0,
        "rps_doc_ldnoobw_words": 0.0, **ZERO_REPETITION,
        "rps_doc_frac_chars_top_2gram": 0.66666667,  # ("the", "cat") twice: 6 * 2 / 18
        "rps_lines_num_words": [3.0, 3.0], "rps_lines_numerical_chars_fraction": [0.0, 0.0],
        "rps_lines_uppercase_letter_fraction": [0.07692308, 0.0], "rps_lines_start_with_bulletpoint": [0.0, 0.0],
        "rps_lines_ending_with_terminal_punctution_mark": [1.0, 1.0], "rps_lines_javascript_counts": [0.0, 0.0],
    }


def test_russian():
    # normalised words: привет мир ёжик (NFD: ё is е + U+0308, so 5 code points)
    assert one("Привет, мир! ЁЖИК") == {
        "rps_doc_word_count": 3, "rps_doc_mean_word_length": 4.66666667, "rps_doc_num_sentences": 2.0,
        "rps_doc_symbol_to_word_ratio": 0.0, "rps_doc_frac_lines_end_with_ellipsis": 0.0,
        "rps_doc_frac_no_alph_words": 1.0, "rps_doc_frac_unique_words": 1.0, "rps_doc_unigram_entropy": 1.09861229,
        "rps_doc_frac_all_caps_words": 0.2, "rps_doc_stop_word_fraction": 0.0, "rps_doc_lorem_ipsum": 0.0,
        "rps_doc_curly_bracket": 0.0, "rps_doc_ldnoobw_words": 0.0, **ZERO_REPETITION,
        "rps_lines_num_words": [3.0], "rps_lines_numerical_chars_fraction": [0.0],
        "rps_lines_uppercase_letter_fraction": [0.29411765], "rps_lines_start_with_bulletpoint": [0.0],
        "rps_lines_ending_with_terminal_punctution_mark": [0.0], "rps_lines_javascript_counts": [0.0],
    }


def test_chinese():
    # no spaces: one normalised word of 11 characters; raw words 中文汉字 / 。 / 東京２０２４
    assert one("中文汉字。東京２０２４") == {
        "rps_doc_word_count": 1, "rps_doc_mean_word_length": 11.0, "rps_doc_num_sentences": 1.0,
        "rps_doc_symbol_to_word_ratio": 0.0, "rps_doc_frac_lines_end_with_ellipsis": 0.0,
        "rps_doc_frac_no_alph_words": 1.0, "rps_doc_frac_unique_words": 1.0, "rps_doc_unigram_entropy": 0.0,
        "rps_doc_frac_all_caps_words": 0.0, "rps_doc_stop_word_fraction": 0.0, "rps_doc_lorem_ipsum": 0.0,
        "rps_doc_curly_bracket": 0.0, "rps_doc_ldnoobw_words": 0.0, **ZERO_REPETITION,
        "rps_lines_num_words": [1.0], "rps_lines_numerical_chars_fraction": [0.36363636],
        "rps_lines_uppercase_letter_fraction": [0.0], "rps_lines_start_with_bulletpoint": [0.0],
        "rps_lines_ending_with_terminal_punctution_mark": [0.0], "rps_lines_javascript_counts": [0.0],
    }


def test_very_long_line():
    got = one(" ".join(["alpha"] * 2000))
    assert got["rps_doc_word_count"] == 2000
    assert got["rps_doc_mean_word_length"] == 5.0
    assert got["rps_doc_frac_unique_words"] == 0.0005
    assert got["rps_doc_unigram_entropy"] == 0.0
    # overlapping n-grams: the top n-gram covers more characters than the text
    assert got["rps_doc_frac_chars_top_2gram"] == 1.999  # 10 * 1999 / 10000
    assert got["rps_doc_frac_chars_top_3gram"] == 2.997
    assert got["rps_doc_frac_chars_top_4gram"] == 3.994
    assert all(got[f"rps_doc_frac_chars_dupe_{n}grams"] == 1.0 for n in range(5, 11))
    assert got["rps_lines_num_words"] == [2000.0]
    assert got["rps_lines_uppercase_letter_fraction"] == [0.0]


def test_repeated_ngrams():
    got = one("a b c d e f a b c d e f x")  # 13 one-letter words
    assert_matches(got, {
        "rps_doc_frac_chars_top_2gram": 0.30769231,  # (a b) x2: 2*2/13
        "rps_doc_frac_chars_top_3gram": 0.46153846,
        "rps_doc_frac_chars_top_4gram": 0.61538462,
        "rps_doc_frac_chars_dupe_5grams": 0.92307692,  # words 0..11 covered, "x" not
        "rps_doc_frac_chars_dupe_6grams": 0.92307692,
        "rps_doc_frac_chars_dupe_7grams": 0.0,
        "rps_doc_frac_chars_dupe_8grams": 0.0,
        "rps_doc_frac_chars_dupe_9grams": 0.0,
        "rps_doc_frac_chars_dupe_10grams": 0.0,
        "rps_doc_frac_unique_words": 0.53846154,
    })


def test_top_ngram_tie_goes_to_first_occurrence():
    # (aa b) and (ccc d) both occur twice; Counter.most_common keeps the first: 3*2/14
    got = one("aa b aa b ccc d ccc d")
    assert got["rps_doc_frac_chars_top_2gram"] == 0.42857143


def test_lorem_ipsum():
    # normalised: "lorem ipsum dolor sit amet lorem ipsum" (38 chars), 2 hits
    assert one("Lorem ipsum dolor sit amet. LOREM IPSUM!") == {
        "rps_doc_word_count": 7, "rps_doc_mean_word_length": 4.57142857, "rps_doc_num_sentences": 2.0,
        "rps_doc_symbol_to_word_ratio": 0.0, "rps_doc_frac_lines_end_with_ellipsis": 0.0,
        "rps_doc_frac_no_alph_words": 0.22222222, "rps_doc_frac_unique_words": 0.71428571,
        "rps_doc_unigram_entropy": 1.54982605, "rps_doc_frac_all_caps_words": 0.22222222,
        "rps_doc_stop_word_fraction": 0.0, "rps_doc_lorem_ipsum": 0.05263158, "rps_doc_curly_bracket": 0.0,
        "rps_doc_ldnoobw_words": 0.0, **ZERO_REPETITION, "rps_doc_frac_chars_top_2gram": 0.625,
        "rps_lines_num_words": [7.0], "rps_lines_numerical_chars_fraction": [0.0],
        "rps_lines_uppercase_letter_fraction": [0.275], "rps_lines_start_with_bulletpoint": [0.0],
        "rps_lines_ending_with_terminal_punctution_mark": [1.0], "rps_lines_javascript_counts": [0.0],
    }
    # the regex is case-insensitive: "ıpsum" (dotless i) counts once an exact hit exists
    assert one("lorem ipsum lorem ıpsum")["rps_doc_lorem_ipsum"] == round(2 / 23, 8)
    assert one("lorem ıpsum")["rps_doc_lorem_ipsum"] == 0.0


def test_curly_brackets():
    # 29 characters, 4 brackets; raw words: function () { return { a : 1 }; }
    got = one("function() { return {a: 1}; }")
    assert_matches(got, {
        "rps_doc_curly_bracket": 0.13793103, "rps_doc_word_count": 4, "rps_doc_mean_word_length": 4.0,
        "rps_doc_num_sentences": 1.0, "rps_doc_frac_no_alph_words": 0.7, "rps_doc_stop_word_fraction": 0.1,
        "rps_doc_unigram_entropy": 1.38629436, "rps_doc_symbol_to_word_ratio": 0.0,
        "rps_lines_numerical_chars_fraction": [0.05263158],  # "function return a 1": 1/19
    })


def test_bullet_lines():
    got = one("• first item\n‣ second\n  ▪ third\n- dash\n– en dash\n")
    assert got["rps_lines_start_with_bulletpoint"] == [1.0, 1.0, 1.0, 0.0, 1.0]
    assert got["rps_lines_num_words"] == [3.0, 2.0, 2.0, 1.0, 3.0]  # bullets are words; "-" is dropped
    assert got["rps_doc_word_count"] == 11
    assert got["rps_doc_mean_word_length"] == 3.09090909
    assert got["rps_lines_ending_with_terminal_punctution_mark"] == [0.0] * 5


def test_all_caps_words():
    # raw words NASA and the USA . HTTP OK U2 ǅEMAL: NASA USA HTTP OK U2 are upper;
    # the titlecase ǅ makes ǅEMAL not upper
    got = one("NASA and the USA. HTTP OK U2 ǅEMAL")
    assert got["rps_doc_frac_all_caps_words"] == 0.55555556
    assert got["rps_doc_stop_word_fraction"] == 0.22222222
    assert got["rps_lines_uppercase_letter_fraction"] == [0.52941176]  # 18 of 34


def test_ellipsis_lines():
    got = one("Wait...\nWhat…  \nNo. . .\nYes....\n...\nok")
    assert got["rps_doc_frac_lines_end_with_ellipsis"] == 0.66666667  # 4 of 6
    assert got["rps_doc_symbol_to_word_ratio"] == 0.33333333  # 3 x "..." + 1 x "…" over 12 raw words
    assert got["rps_lines_ending_with_terminal_punctution_mark"] == [1.0, 0.0, 1.0, 1.0, 1.0, 0.0]
    assert got["rps_doc_num_sentences"] == 4.0


def test_javascript_numbers_and_bad_words():
    got = one("Please enable JavaScript.\njavascript javascript: x")
    assert got["rps_lines_javascript_counts"] == [1.0, 2.0]
    got = one("Call 555-1234 now\n½ ² ٣")
    assert got["rps_lines_numerical_chars_fraction"] == [0.4375, 0.6]  # "call 5551234 now": 7/16
    assert one("This is 2 girls 1 cup and a blue waffle")["rps_doc_ldnoobw_words"] == 2.0
    assert one("a b c a b", bad_words=frozenset({"a b", "c", "x y z"}))["rps_doc_ldnoobw_words"] == 3.0
    assert one("The the THE", stop_words=frozenset({"THE"}))["rps_doc_stop_word_fraction"] == 0.33333333
    # stop words are compared as whole byte strings: long ones and non-ASCII ones too
    long_word = "internationalization"
    assert one(f"{long_word} {long_word}s für fur", stop_words=frozenset({long_word, "für"}))[
        "rps_doc_stop_word_fraction"] == 0.5


def test_capital_sigma_uses_final_form():
    # "ΟΔΟΣ ΣΟΦΟΣ" lowercases to "οδος σοφος" with final sigmas, so the words differ
    # from "οδοσ" written with a medial sigma
    got = one("ΟΔΟΣ οδοσ")
    assert got["rps_doc_frac_unique_words"] == 1.0
    got = one("ΟΔΟΣ οδος")
    assert got["rps_doc_frac_unique_words"] == 0.5


# ---------------------------------------------------------------------------
# cross-check against the reference
# ---------------------------------------------------------------------------
_POOL = (
    "the of and to a in is it you that he was for on are with as I his they be at one have this from "
    "Lorem ipsum LOREM IPSUM lorem ipsum. javascript JavaScript javascript: NASA USA HTTP OK ǅemal ǈ İstanbul "
    "Σίσυφος ΣΟΦΟΣ σοφός ΌΣΟΣ Привет мир ЁЖИК йод 中文 汉字 東京 日本語 ﬁne ﬀ Å Ω K µ ß ẞ "
    "e\u0301 a\u0323\u0302 \u1ec7 e\u0302\u0323 q\u0307\u0323 ș ț ŀ ĳ ½ ² ٣ ፲ ⅷ Ⅻ ① 𝟘 𝐀 𝐚 "
    "... … ## # { } {x} } • ‣ ▶ ◀ ◦ ■ □ ▪ ▫ – — - * » \u201c \u201d \u2019 ' \" ! ? !? ..... "
    "2g1c 2 girls 1 cup blow job anal xxx s&m g-spot fuck FUCK nsfw images ıpsum ipſum loremipsum "
    "12 3.14 1,000 100% $5 @user #tag http://x.y/z?a=b don't o'clock _under_ a_b \u00a0 \u2028 \u3000 \x1c"
).split(" ")
_SEPS = [" ", " ", " ", " ", "  ", "\n", "\n", "\n\n", "\t", "\r\n", " \n ", "\u00a0", "\u2028", "\x0b", "\x1c",
         "\u3000", "", ".", ". ", "! ", "? ", "...\n", " …\n", "\n• ", "\n– ", "\n  ▪ "]


def _synthetic(rng: random.Random) -> str:
    k = rng.choice([0, 1, 2, 3, 5, 10, 30, 100, 300])
    words = [rng.choice(_POOL) for _ in range(k)]
    if k > 10 and rng.random() < 0.4:  # plant repeated n-grams
        s, ln = rng.randrange(k), rng.randint(2, 12)
        words = words + words[s:s + ln] * rng.randint(1, 4) + words
    text = "".join(w + rng.choice(_SEPS) for w in words)
    if rng.random() < 0.2:
        text = text.rstrip("\n")
    return text.upper() if rng.random() < 0.1 else text


def _random_codepoints(rng: random.Random) -> str:
    out = []
    for _ in range(rng.choice([1, 5, 20, 100, 400])):
        r = rng.random()
        if r < 0.3:
            out.append(rng.choice(" \n\t.!?#{}…”•–'-_"))
        elif r < 0.5:
            out.append(chr(rng.randrange(32, 127)))
        elif r < 0.8:
            c = rng.randrange(0x80, 0x10000)
            out.append(chr(c) if not 0xD800 <= c < 0xE000 else "x")
        elif r < 0.9:
            out.append(chr(rng.choice([0x300, 0x301, 0x323, 0x345, 0x3A3, 0x130, 0x1F82, 0xAC00, 0x212B, 0x37E,
                                       0x1FEF, 0x2028, 0x85, 0xA0, 0x1C, 0x1C5])))
        else:
            out.append(chr(rng.randrange(0x10000, 0x110000)))
    return "".join(out)


def _corpus(sample_dir: Path) -> list[str]:
    rng = random.Random(20240601)
    texts = [_synthetic(rng) for _ in range(250)] + [_random_codepoints(rng) for _ in range(150)]
    texts += ["", " ", "\n", "\n\n", "a\n", "\na", "Σ", "ΑΣ Σ", "x" * 3000, "...", "…", "#", "{}",
              "w " * 5000, ("one two three four five six seven eight nine ten eleven " * 40).strip()]
    for path in sorted(glob.glob(str(sample_dir / "**" / "*.parquet"), recursive=True)):
        texts += pq.read_table(path, columns=["text"])["text"].to_pylist()[:40]
    for path in sorted(SHARED_DOLMA.glob("*.jsonl.gz"))[:1]:  # real web text, when present
        with gzip.open(path, "rt") as f:
            texts += [json.loads(line)["text"] for _, line in zip(range(120), f)]
    return texts


def test_matches_reference_implementation(sample_dir):
    texts = _corpus(sample_dir)
    sw, bw = stop_words(), ldnoobw_words("en")
    got = compute_signals(pa.array(texts)).to_pylist()
    for text, row in zip(texts, got):
        assert_matches(row, reference_signals(text, sw, bw), text)


def test_other_language_word_lists():
    sw, bw = frozenset({"der", "die", "das"}), ldnoobw_words("de")
    text = "Das ist die Arsch Möse möse Hure. Der Hund ist nackt."
    got = one(text, language="de", stop_words=sw)
    assert_matches(got, reference_signals(text, sw, bw), text)
    assert got["rps_doc_ldnoobw_words"] == 3.0  # arsch hure nackt; "möse" is stored precomposed, words are NFD


# ---------------------------------------------------------------------------
# Arrow plumbing, schema, threads, SQL
# ---------------------------------------------------------------------------
def test_schema_and_names():
    schema = signals_schema()
    assert "rps_lines_ending_with_terminal_punctution_mark" in schema.names
    assert schema.names == list(DOC_SIGNALS) + list(LINE_SIGNALS)
    assert schema.field("rps_doc_word_count").type == pa.int64()
    assert all(schema.field(n).type == pa.list_(pa.float64()) for n in LINE_SIGNALS)
    assert compute_signals(pa.array([], pa.string())).schema == schema


def test_arrow_inputs_nulls_slices_and_threads():
    texts = ["One. Two!", None, "", "Three four\nfive", "ΣΣ six", "lorem ipsum"] * 7
    base = compute_signals(pa.array(texts))
    assert base.num_rows == len(texts)
    assert base.slice(1, 1).to_pylist()[0]["rps_doc_word_count"] is None
    assert base.slice(1, 1).to_pylist()[0]["rps_lines_num_words"] is None
    assert compute_signals(pa.array(texts, pa.large_string())).equals(base)
    assert compute_signals(pa.chunked_array([texts[:5], texts[5:]])).equals(base)
    assert compute_signals(pa.array(["pad"] + texts).slice(1)).equals(base)
    assert compute_signals(pa.array(texts), threads=3).equals(base)


def test_ut1_blacklist_needs_urls():
    texts = pa.array(["a", "b", "c"])
    urls = pa.array(["https://bad.example/x", "http://good.example/", None])
    got = compute_signals(texts, urls, ut1_domains={"bad.example": 7})
    assert got["rps_doc_ut1_blacklist"].to_pylist() == [7, None, None]
    assert "rps_doc_ut1_blacklist" not in compute_signals(texts).schema.names
    with pytest.raises(ValueError):
        compute_signals(texts, ut1_domains={})


def test_duckdb_line_aggregates():
    signals = compute_signals(pa.array(["Ends well.\nno end\nyes!", "", "one"]))  # noqa: F841
    rows = duckdb.sql(
        "SELECT list_avg(rps_lines_ending_with_terminal_punctution_mark) AS term, "
        "list_sum(rps_lines_num_words) AS words FROM signals").fetchall()
    assert rows[0] == (pytest.approx(2 / 3), 5.0)
    assert rows[1] == (None, None)
    assert rows[2] == (0.0, 1.0)


# ---------------------------------------------------------------------------
# building blocks
# ---------------------------------------------------------------------------
def test_unicode_tables_follow_python():
    t = get_tables()
    chars = "".join(chr(c) for c in range(0x30000) if not 0xD800 <= c < 0xE000)
    flags = t.flags[[ord(c) for c in chars]]
    assert [ord(c) for c in re.findall(r"\s", chars)] == [ord(c) for c in chars if t.flags[ord(c)] & SPACE]
    assert [ord(c) for c in re.findall(r"\w", chars)] == [ord(c) for c in chars if t.flags[ord(c)] & WORD]
    assert int(np.count_nonzero(flags & WORD)) > 100000
    sample = chars[::7]
    for c in sample:
        f = t.flags[ord(c)]
        assert bool(f & UPPER) == c.isupper()
        assert bool(f & NUMERIC) == c.isnumeric()
        assert bool(f & LOWER_OR_TITLE) == (not ("A" + c).isupper())
    for c in sample:  # lowering and NFD keep whitespace exactly where it was
        mapped = unicodedata.normalize("NFD", c.lower())
        assert any(x.isspace() for x in mapped) == c.isspace()


def test_rounding_matches_python_round():
    rng = np.random.default_rng(0)
    x = np.concatenate([
        rng.random(20000), rng.random(2000) * 50, np.arange(1, 3000) / 2560.0, np.arange(1, 2000) / 512.0,
        np.array([0.005859375, 0.000390625, 1e12 + 0.123456789, 0.0, 1.0]),
    ])
    assert py_round(x).tolist() == [round(float(v), 8) for v in x]
