"""``compute_signals``: RPv2 quality signals for an Arrow array of texts.

Flow per batch: two compiled passes read the Arrow UTF-8 buffer in place (raw
text, then normalised text) and return integer counts; ratios are formed here
with numpy using the same operations as the reference (so float results are
bit-identical), rounded like Python's ``round(x, 8)``, and packed into Arrow.
Python only touches the rare documents whose value depends on context that a
per-character table cannot express (capital sigma; "lorem ipsum" matched
case-insensitively by a regex).
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Mapping
from urllib.parse import urlsplit

import numpy as np
import pyarrow as pa

from curate.common.threads import map_in_order, shares
from curate.io.strings import string_spans

from . import raw_kernel, words_kernel
from .lookups import phrase_table, stop_word_table
from .names import DOC_SIGNALS, LINE_SIGNALS, UT1_SIGNAL, signals_schema
from .rounding import py_round
from .unicode_tables import get_tables
from .wordlists import ldnoobw_words
from .wordlists import stop_words as default_stop_words

_PUNCT_TABLE = str.maketrans("", "", string.punctuation)
_LOREM = re.compile(r"lorem ipsum", re.IGNORECASE)
_RAW = {name: k for k, name in enumerate(raw_kernel.DOC_FIELDS)}
_NORM = {name: k for k, name in enumerate(words_kernel.DOC_FIELDS)}


def rpv2_normalize(text: str) -> str:
    """RPv2's ``normalize``: drop ASCII punctuation, lowercase, collapse
    whitespace, NFD."""
    text = text.translate(_PUNCT_TABLE).lower().strip()
    return unicodedata.normalize("NFD", re.sub(r"\s+", " ", text))


def compute_signals(
    texts: pa.Array | pa.ChunkedArray,
    urls: pa.Array | pa.ChunkedArray | None = None,
    *,
    stop_words: frozenset[str] | None = None,
    language: str = "en",
    bad_words: frozenset[str] | None = None,
    ut1_domains: Mapping[str, int] | None = None,
    threads: int = 1,
) -> pa.Table:
    """RPv2 signals, one row per text, in order (schema: :func:`signals_schema`).

    - ``stop_words``: the set for ``rps_doc_stop_word_fraction`` (default: RPv2's
      list for ``language``; only English is shipped, other languages must pass
      one); ``bad_words``: LDNOOBW entries (default: the shipped list for
      ``language``, one of en/fr/it/es/de, else empty as in RPv2).
    - ``ut1_domains``: optional UT1 ``domain -> category id`` mapping (RPv2's
      ``domain_to_category_id.json``); with ``urls`` it adds
      ``rps_doc_ut1_blacklist`` (domain = the URL's netloc, like CCNet's
      ``source_domain``).
    - ``threads``: split the batch over this many threads (the kernels release
      the GIL); keep 1 inside Ray tasks that already use one core each.
    Null texts give null signals.
    """
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    if not (pa.types.is_string(texts.type) or pa.types.is_large_string(texts.type)):
        texts = texts.cast(pa.large_string())
    if isinstance(urls, pa.ChunkedArray):
        urls = urls.combine_chunks()
    if urls is not None and len(urls) != len(texts):
        raise ValueError(f"urls has {len(urls)} rows but texts has {len(texts)}")
    sw = stop_word_table(frozenset(default_stop_words(language) if stop_words is None else stop_words))
    ph = phrase_table(frozenset(ldnoobw_words(language) if bad_words is None else bad_words))

    get_tables()  # build once here rather than racing in the threads
    parts = [texts.slice(a, b - a) for a, b in _plan(texts, threads)]
    tables = map_in_order(lambda part: _compute(part, sw, ph), parts, threads)
    table = pa.concat_tables(tables).combine_chunks()
    if ut1_domains is not None:
        table = _add_ut1(table, urls, ut1_domains)
    return table


#: at most this much text per kernel call, which bounds the scratch memory
MAX_PART_BYTES = 32 << 20


def _plan(texts: pa.Array, threads: int) -> list[tuple[int, int]]:
    """[start, end) row ranges: ``threads`` equal shares, each cut further so
    that no range holds more than MAX_PART_BYTES of text (at least one row)."""
    n = len(texts)
    _, starts, ends, _ = string_spans(texts, "signals")
    sizes = np.concatenate(([0], np.cumsum(ends - starts)))
    out = []
    for a, b in shares(n, threads):
        while True:
            cut = int(np.searchsorted(sizes, sizes[a] + MAX_PART_BYTES, side="right")) - 1
            cut = min(b, max(cut, a + 1))
            out.append((int(a), int(cut)))
            if cut >= b:
                break
            a = cut
    return out


def _compute(texts: pa.Array, sw, ph) -> pa.Table:
    t = get_tables()
    n = len(texts)
    data, starts, ends, _ = string_spans(texts, "signals")
    n_lines, sigma = raw_kernel.scan_docs(data, starts, ends)
    line_off = np.zeros(n + 1, np.int64)
    np.cumsum(n_lines, out=line_off[1:])

    raw, upper_cnt, line_len, terminal, bullet = raw_kernel.raw_pass(
        data, starts, ends, line_off, t.flags, sw.slots, sw.keys, sw.data, sw.off, sw.max_len, sw.first)

    py_cps, py_start, py_end = _python_normalized(texts, np.flatnonzero(sigma), n)
    norm, entropy, l_words, l_chars, l_numeric, l_js = words_kernel.words_pass(
        data, starts, ends, py_cps, py_start, py_end, line_off, t.flags, t.nfd_lower, t.exp_off,
        t.exp_data, t.ccc, t.punct, ph.slots, ph.hashes, ph.fw_slots, ph.fw_hash, ph.fw_mask,
        ph.phrase_off, ph.cps, ph.word_off)

    valid = None if texts.null_count == 0 else np.asarray(texts.is_valid())
    cols = _doc_columns(texts, raw, norm, entropy)
    arrays = [_doc_array(cols[name], typ, valid) for name, typ in DOC_SIGNALS.items()]

    # per line: normalised line = " ".join(its words), so its length is chars + gaps
    norm_len = l_chars + np.maximum(l_words - 1, 0)
    numeric = np.zeros(len(norm_len))
    nz = norm_len > 0
    numeric[nz] = py_round(l_numeric[nz] / norm_len[nz])
    lines = {
        "rps_lines_num_words": l_words.astype(np.float64),
        "rps_lines_numerical_chars_fraction": numeric,
        "rps_lines_uppercase_letter_fraction": py_round(upper_cnt / np.maximum(line_len, 1)),
        "rps_lines_ending_with_terminal_punctution_mark": terminal.astype(np.float64),
        "rps_lines_javascript_counts": l_js.astype(np.float64),
    }
    mask = None if valid is None else pa.array(~valid)
    offsets32 = pa.array(line_off.astype(np.int32))
    for name in LINE_SIGNALS:
        if name == "rps_lines_start_with_bulletpoint":
            arrays.append(_bullet_array(bullet, n_lines, mask))
        else:
            arrays.append(pa.ListArray.from_arrays(offsets32, pa.array(lines[name]), mask=mask))
    return pa.Table.from_arrays(arrays, schema=signals_schema())


def _python_normalized(texts: pa.Array, idx: np.ndarray, n: int):
    """Normalised code points (whitespace kept) for documents the table cannot do."""
    py_start = np.full(n, -1, np.int64)
    py_end = np.full(n, -1, np.int64)
    chunks, pos = [], 0
    for i in idx:
        text = texts[int(i)].as_py() or ""
        norm = unicodedata.normalize("NFD", text.translate(_PUNCT_TABLE).lower())
        cps = np.frombuffer(norm.encode("utf-32-le"), np.uint32).astype(np.int32)
        py_start[i], py_end[i] = pos, pos + len(cps)
        pos += len(cps)
        chunks.append(cps)
    py_cps = np.concatenate(chunks) if chunks else np.zeros(1, np.int32)
    return py_cps, py_start, py_end


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den rounded like Python, NaN (-> null) where den == 0."""
    out = np.full(len(num), np.nan)
    nz = den != 0
    out[nz] = py_round(num[nz] / den[nz])
    return out


def _doc_columns(texts: pa.Array, raw: np.ndarray, norm: np.ndarray, entropy: np.ndarray) -> dict:
    def r(name):
        return raw[:, _RAW[name]].astype(np.float64)

    def w(name):
        return norm[:, _NORM[name]].astype(np.float64)

    n_raw, n_norm, chars = r("n_words"), w("n_words"), w("n_word_chars")
    has_words = n_norm > 0
    norm_len = np.where(has_words, chars + n_norm - 1, 0.0)  # len(" ".join(words))
    cols = {
        "rps_doc_word_count": norm[:, _NORM["n_words"]],
        "rps_doc_mean_word_length": _ratio(chars, n_norm),
        "rps_doc_num_sentences": r("n_sentences"),
        "rps_doc_symbol_to_word_ratio": _ratio(r("n_symbols"), n_raw),
        "rps_doc_frac_lines_end_with_ellipsis": _ratio(r("n_ellipsis_lines"), r("n_lines")),
        "rps_doc_frac_no_alph_words": _one_minus(r("n_alpha_words"), n_raw),
        "rps_doc_frac_unique_words": _ratio(w("n_unique"), n_norm),
        "rps_doc_unigram_entropy": np.where(has_words, py_round(entropy), np.nan),
        "rps_doc_frac_all_caps_words": _ratio(r("n_caps_words"), n_raw),
        "rps_doc_stop_word_fraction": np.where(has_words, np.nan_to_num(_ratio(r("n_stop_words"), n_raw)), 0.0),
        "rps_doc_lorem_ipsum": _lorem(texts, norm[:, _NORM["lorem_pairs"]]),
        "rps_doc_curly_bracket": np.nan_to_num(_ratio(r("n_curly"), r("n_chars"))),
        "rps_doc_ldnoobw_words": np.where(norm_len > 0, w("n_ldnoobw"), 0.0),
    }
    for k in (2, 3, 4):
        cols[f"rps_doc_frac_chars_top_{k}gram"] = np.nan_to_num(_ratio(w(f"top{k}_num"), chars))
    for k in range(5, 11):
        cols[f"rps_doc_frac_chars_dupe_{k}grams"] = np.nan_to_num(_ratio(w(f"dupe{k}"), chars))
    return cols


def _one_minus(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.full(len(num), np.nan)
    nz = den != 0
    out[nz] = py_round(1.0 - num[nz] / den[nz])
    return out


def _lorem(texts: pa.Array, pairs: np.ndarray) -> np.ndarray:
    """Occurrences of "lorem ipsum" (regex, IGNORECASE) per normalised character;
    only documents with an exact hit are looked at, as in RPv2."""
    out = np.zeros(len(pairs))
    for i in np.flatnonzero(pairs):
        norm = rpv2_normalize(texts[int(i)].as_py())
        out[i] = round(len(_LOREM.findall(norm)) / len(norm), 8)
    return out


def _doc_array(values: np.ndarray, typ: pa.DataType, valid: np.ndarray | None) -> pa.Array:
    null = np.isnan(values) if values.dtype.kind == "f" else np.zeros(len(values), bool)
    if valid is not None:
        null |= ~valid
    return pa.array(values, type=typ, mask=null if null.any() else None)


def _bullet_array(bullet: np.ndarray, n_lines: np.ndarray, mask: pa.Array | None) -> pa.ListArray:
    """RPv2 returns a single None for a document without lines (empty text)."""
    empty = n_lines == 0
    per_doc = np.where(empty, 1, n_lines)
    off = np.zeros(len(n_lines) + 1, np.int64)
    np.cumsum(per_doc, out=off[1:])
    values = np.full(off[-1], np.nan)
    shift = np.cumsum(empty) - empty  # empty documents before each document
    values[np.arange(len(bullet)) + np.repeat(shift, n_lines)] = bullet
    arr = pa.array(values, mask=np.isnan(values))
    return pa.ListArray.from_arrays(pa.array(off.astype(np.int32)), arr, mask=mask)


def _add_ut1(table: pa.Table, urls: pa.Array | None, ut1_domains: Mapping[str, int]) -> pa.Table:
    if urls is None:
        raise ValueError("ut1_domains needs urls")
    ids = [None if u is None else ut1_domains.get(urlsplit(u).netloc) for u in urls.to_pylist()]
    col = pa.array(ids, type=pa.int64())
    pos = table.schema.get_field_index(LINE_SIGNALS[0])
    return table.add_column(pos, UT1_SIGNAL, col)
