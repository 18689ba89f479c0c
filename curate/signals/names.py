"""Signal names: the public contract shared with RedPajama-V2 recipes.

Spelled exactly as RPv2 spells them, including the misspelled
``rps_lines_ending_with_terminal_punctution_mark``.
"""

from __future__ import annotations

import pyarrow as pa

#: document-level signals and their Arrow types, in output column order
DOC_SIGNALS: dict[str, pa.DataType] = {
    "rps_doc_word_count": pa.int64(),
    "rps_doc_mean_word_length": pa.float64(),
    "rps_doc_num_sentences": pa.float64(),
    "rps_doc_symbol_to_word_ratio": pa.float64(),
    "rps_doc_frac_lines_end_with_ellipsis": pa.float64(),
    "rps_doc_frac_no_alph_words": pa.float64(),
    "rps_doc_frac_unique_words": pa.float64(),
    "rps_doc_unigram_entropy": pa.float64(),
    "rps_doc_frac_all_caps_words": pa.float64(),
    "rps_doc_stop_word_fraction": pa.float64(),
    "rps_doc_lorem_ipsum": pa.float64(),
    "rps_doc_curly_bracket": pa.float64(),
    "rps_doc_ldnoobw_words": pa.float64(),
    "rps_doc_frac_chars_top_2gram": pa.float64(),
    "rps_doc_frac_chars_top_3gram": pa.float64(),
    "rps_doc_frac_chars_top_4gram": pa.float64(),
    "rps_doc_frac_chars_dupe_5grams": pa.float64(),
    "rps_doc_frac_chars_dupe_6grams": pa.float64(),
    "rps_doc_frac_chars_dupe_7grams": pa.float64(),
    "rps_doc_frac_chars_dupe_8grams": pa.float64(),
    "rps_doc_frac_chars_dupe_9grams": pa.float64(),
    "rps_doc_frac_chars_dupe_10grams": pa.float64(),
}

#: line-level signals: one value per line, as list<double>
LINE_SIGNALS: tuple[str, ...] = (
    "rps_lines_num_words",
    "rps_lines_numerical_chars_fraction",
    "rps_lines_uppercase_letter_fraction",
    "rps_lines_start_with_bulletpoint",
    "rps_lines_ending_with_terminal_punctution_mark",
    "rps_lines_javascript_counts",
)

#: only present when a UT1 domain mapping is passed to ``compute_signals``
UT1_SIGNAL = "rps_doc_ut1_blacklist"


def signals_schema(with_ut1: bool = False) -> pa.Schema:
    """Arrow schema of :func:`curate.signals.compute_signals`' output."""
    fields = [pa.field(name, typ) for name, typ in DOC_SIGNALS.items()]
    if with_ut1:
        fields.append(pa.field(UT1_SIGNAL, pa.int64()))
    fields += [pa.field(name, pa.list_(pa.float64())) for name in LINE_SIGNALS]
    return pa.schema(fields)
