"""A slow, literal reimplementation of the RPv2 signals, written straight from
the specification (shared/reference/rpv2-signals.md, RPv2 ``app/src/core``),
used to cross-check :func:`curate.signals.compute_signals`.

Kept deliberately naive: one regex or loop per signal, Python ``round``.
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter

import numpy as np

_PUNCT = str.maketrans("", "", string.punctuation)
_WORDPUNCT = re.compile(r"\w+|[^\w\s]+")  # nltk WordPunctTokenizer
_LINES = re.compile(r"([^\n]*\n|[^\n]+$)")
_SENT = re.compile(r"\b[^.!?]+[.!?]*", flags=re.UNICODE)
_ALPHA = re.compile(r"[a-zA-Z]")
_LOREM = re.compile(r"lorem ipsum", re.IGNORECASE)
_BULLETS = ("\u2022", "\u2023", "\u25B6", "\u25C0", "\u25E6", "\u25A0", "\u25A1", "\u25AA", "\u25AB", "\u2013")


def normalize(text: str) -> str:
    text = text.translate(_PUNCT)
    text = text.lower()
    text = text.strip()
    text = re.sub(r"\s+", " ", text)
    return unicodedata.normalize("NFD", text)


def _ngrams(seq, n):
    return [tuple(seq[i:i + n]) for i in range(len(seq) - n + 1)]


def _r(x):
    return round(x, 8)


def reference_signals(text: str, stop_words: frozenset, bad_words: frozenset) -> dict:
    norm = normalize(text)
    raw_lines = [m.group(0) for m in _LINES.finditer(text)]
    norm_lines = [normalize(line) for line in raw_lines]
    raw_words = _WORDPUNCT.findall(text)
    words = norm.split()
    n_raw, n_norm = len(raw_words), len(words)
    out = {}

    # natural language
    out["rps_doc_word_count"] = n_norm
    out["rps_doc_mean_word_length"] = None if n_norm == 0 else _r(float(sum(map(len, words))) / n_norm)
    out["rps_doc_num_sentences"] = float(len(_SENT.findall(text)))
    out["rps_doc_symbol_to_word_ratio"] = (
        None if n_raw == 0 else _r(float(sum(text.count(x) for x in ("#", "...", "…"))) / n_raw))
    out["rps_doc_frac_lines_end_with_ellipsis"] = (
        None if not raw_lines
        else _r(float(sum(line.rstrip().endswith(("...", "…")) for line in raw_lines)) / len(raw_lines)))
    out["rps_doc_frac_no_alph_words"] = (
        None if n_raw == 0 else _r(1.0 - float(sum(_ALPHA.search(w) is not None for w in raw_words)) / n_raw))
    out["rps_doc_frac_unique_words"] = None if n_norm == 0 else _r(float(len(set(words))) / n_norm)
    if n_norm == 0:
        out["rps_doc_unigram_entropy"] = None
    else:
        counter = Counter(words)
        total = sum(counter.values())
        out["rps_doc_unigram_entropy"] = _r(sum(-x / total * math.log(x / total) for x in counter.values()))
    out["rps_doc_frac_all_caps_words"] = None if n_raw == 0 else _r(float(sum(map(str.isupper, raw_words))) / n_raw)

    # content
    out["rps_doc_stop_word_fraction"] = (
        0.0 if n_norm == 0 else _r(float(sum(w in stop_words for w in raw_words)) / n_raw))
    if len(norm) == 0 or "lorem ipsum" not in norm:
        out["rps_doc_lorem_ipsum"] = 0.0
    else:
        out["rps_doc_lorem_ipsum"] = _r(float(len(_LOREM.findall(norm))) / len(norm))
    if len(text) == 0 or ("{" not in text and "}" not in text):
        out["rps_doc_curly_bracket"] = 0.0
    else:
        out["rps_doc_curly_bracket"] = _r(float(text.count("{") + text.count("}")) / len(text))
    if len(norm) == 0:
        out["rps_doc_ldnoobw_words"] = 0.0
    else:
        dirty = 0
        for n in {1 + w.count(" ") for w in bad_words}:
            if n == 1:
                dirty += sum(1 for w in words if w in bad_words)
            else:
                dirty += sum(1 for t in _ngrams(words, n) if " ".join(t) in bad_words)
        out["rps_doc_ldnoobw_words"] = float(dirty)

    # repetitions
    total_chars = sum(len(w) for w in words)
    for n in (2, 3, 4):
        top = Counter(_ngrams(words, n)).most_common(1)
        if not top or top[0][1] <= 1:
            out[f"rps_doc_frac_chars_top_{n}gram"] = 0.0
        else:
            gram, count = top[0]
            out[f"rps_doc_frac_chars_top_{n}gram"] = _r(sum(len(w) for w in gram) * count / total_chars)
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
        out[f"rps_doc_frac_chars_dupe_{n}grams"] = _r(float(np.sum(lengths * covered) / np.sum(lengths)))

    # lines
    out["rps_lines_num_words"] = [float(len(line.split())) for line in norm_lines]
    out["rps_lines_numerical_chars_fraction"] = [
        0.0 if len(line) == 0 else _r(sum(map(str.isnumeric, line)) / len(line)) for line in norm_lines]
    out["rps_lines_uppercase_letter_fraction"] = [
        _r(sum(map(str.isupper, line)) / len(line)) for line in raw_lines]
    out["rps_lines_start_with_bulletpoint"] = (
        [None] if not raw_lines else [float(line.lstrip().startswith(_BULLETS)) for line in raw_lines])
    out["rps_lines_ending_with_terminal_punctution_mark"] = [
        float(line.rstrip().endswith((".", "!", "?", "”"))) for line in raw_lines]
    out["rps_lines_javascript_counts"] = [
        float(sum(1 for w in line.split() if w == "javascript")) for line in norm_lines]
    return out
