"""Our Gopher / FineWeb recipes against datatrove's own filters, on real web text (docs/parity.md).

Our decision for a document is the recipe's SQL evaluated by DuckDB over its text and the columns the signals
stage stores (RedPajama-V2 signals, and `dt_words`: datatrove's word statistics from
`curate.signals.datatrove_word_stats`) the way the filter stage does it (`reason_sql`: the first failed rule,
NULL failing). datatrove's is its filter's `.filter(Document)` with default arguments (spaCy's blank English
tokenizer, offline). The machinery (corpus readers, both sides, the classes) is `bench/parity.py`, shared with
`bench/eval_parity.py`, which measures every corpus in full.

Every disagreement must fall into a documented class. One is left: ``words``, our tokenizer giving other
words than spaCy's for the document (datatrove's own filter reaching our decision on our words). The classes
of the earlier approximate recipes (the RE2 word split, the RPv2 duplicate-n-gram gate, the n-gram repeat and
tie approximations) are closed: the words and the n-gram statistics are now datatrove's exactly.

The real documents come from ../shared/data; those tests skip where it is absent. The tokenizer, statistics
and synthetic parity tests need no data.
"""

from __future__ import annotations

import os
import random
import sys
from collections import Counter
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

pytest.importorskip("datatrove")
pytest.importorskip("spacy")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import parity as P  # noqa: E402  (bench/parity.py)

from curate.signals import datatrove_word_stats, datatrove_words  # noqa: E402
from curate.signals.dtwords_data import load_tables  # noqa: E402

SHARED_DATA = P.SHARED_DATA
RECIPES = P.RECIPES
CLASSES = P.CLASSES
REASONS = P.REASONS

# Every corpus bench/eval_parity.py measures, the big ones thinned to every k-th document so that the whole
# file stays well within a minute on two cores (datatrove's spaCy tokenizer is the cost).
CAPS = {"enwiki": 60, "minhash_articles": 500}
SAMPLE_DOCS = 500  # curate's own sample corpus (eval_parity.py: 2,000)

# Floors, from the measured agreement (docs/parity.md): since the recipes read datatrove's own words and
# statistics (an exact re-implementation of spaCy's tokenizer), every recipe agrees with datatrove on every
# document of every corpus: 6,548 documents in bench/eval_parity.py, all of them here. A floor below 1.0
# would let a tokenizer or rule regression through; an upstream change (spaCy's rules, datatrove's filters)
# fails here too, and calls for `python -m curate.signals.dtwords_build` and a new measurement. The recipes
# these replace agreed on 96.8-100% per corpus (lowest: gopher_quality on dclm 0.968, gopher_repetition
# on the data-juicer StackExchange extracts 0.900), the signal-only ones before them on 67-88% overall.
FLOOR_OVERALL = 1.0
FLOOR_PER_DATASET = {}  # corpus -> floor where it is lower than FLOOR_OVERALL (none)


# --- the real-data parity run -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def parity(tmp_path_factory):
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not on this machine")
    corpora = P.real_corpora(SHARED_DATA, caps=CAPS)
    if not corpora:
        pytest.skip("no sample documents under ../shared/data")
    corpora["curate_sample"] = P.sample_corpus(tmp_path_factory.mktemp("sample"), docs=SAMPLE_DOCS)
    return P.run_parity(corpora, tmp_path_factory.mktemp("parity"), workers=max(1, min(4, os.cpu_count() or 1)))


def agreement_table(parity) -> dict[tuple[str, str], tuple[int, int]]:
    """(recipe, dataset or 'all') -> (agreeing documents, documents)."""
    return P.agreement_table(parity)


@pytest.mark.slow  # datatrove's filters over the real documents of ../shared/data (a whole-matrix run; skips without it)
def test_agreement_with_datatrove_on_real_documents(parity):
    text = P.report(parity)
    print("\n" + text)
    table = agreement_table(parity)
    for (name, dataset), (same, total) in table.items():
        floor = FLOOR_OVERALL if dataset == "all" else FLOOR_PER_DATASET.get(dataset, FLOOR_OVERALL)
        assert same / total >= floor, f"{name} on {dataset}: {same}/{total} agree\n{text}"


@pytest.mark.slow  # datatrove's filters over the real documents of ../shared/data (a whole-matrix run; skips without it)
def test_every_disagreement_has_a_documented_cause(parity):
    unexplained = [d for d in parity["disagreements"] if d[-1] not in CLASSES]
    assert not unexplained, "\n".join(map(str, unexplained))
    # what is left can only be the tokenizer (`words`), and the floors above hold it at zero today
    counts = Counter(d[-1] for d in parity["disagreements"])
    assert set(counts) <= set(CLASSES), counts


@pytest.mark.slow  # datatrove's filters over the real documents of ../shared/data (a whole-matrix run; skips without it)
def test_first_failed_rule_is_datatrove_reason(parity):
    """Where both remove a document, our first failed rule names datatrove's reason (rules are in its order):
    measured on every such document (1,473, 530 and 1,413 of them in bench/eval_parity.py)."""
    for name, (same, both) in P.first_reason_table(parity).items():
        assert both > 0 and same == both, f"{name}: {same}/{both}"


def test_every_folder_of_the_shared_data_is_measured_or_explained():
    """A folder added to ../shared/data gets a reader in bench/parity.py (CORPORA) or a reason (SKIPPED)."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not on this machine")
    described = " ".join(what for what, _ in P.CORPORA.values()) + " " + " ".join(P.SKIPPED)
    folders = {p.name for p in SHARED_DATA.iterdir() if p.is_dir()}
    folders |= {f"dolma/{p.name}" for p in (SHARED_DATA / "dolma").iterdir() if p.is_dir()} if (SHARED_DATA / "dolma").is_dir() else set()
    folders |= {f"dclm/{p.name}" for p in (SHARED_DATA / "dclm").iterdir() if p.is_dir()} if (SHARED_DATA / "dclm").is_dir() else set()
    folders -= {"dolma", "dclm"}
    missing = sorted(f for f in folders if f not in described)
    assert not missing, f"not read by bench/parity.py nor listed in SKIPPED: {missing}"


# --- the tokenizer and the statistics (no data needed) --------------------------------------------------

def _spacy_words(text: str) -> list[str]:
    from datatrove.utils.text import split_into_words

    return split_into_words(text)


TRICKY = [
    "Hi, it's 10.5 -- U.S. http://x.io/a. well-known 03/12/2019 свойства[править] 已有六月蜂网账户，可以直接登录。",
    "Mr. Smith can't go to the U.S. (http://x.com) today... ''Quoted'' 6oz 8km 45°19′3″S :) <3 C++ +12 -12",
    "Dec-2013 Vdc+ Vdc- \\$\\begingroup\\$ etc.</ref id=\"p1\">P1 txt='03 end.Next l'année c'est d'AC N'Roses",
    "Ph.D. a.m. 10a.m. 3pm e.g. vs. Sept. Co. Corp. Inc. Md. Wis. |Date :D im dont cannot gonna y'all o'clock",
    "user@example.com www.example.org/path?q=1#f 192.168.0.1 8.8.8.8:53/x 1.2.3.4/foo-bar ftp://a.b.c/d",
    ".357 .333 2\"-3 3\"-6 2\"+ these- -els grāv'əl 雨☝(◔ิ ¯\\_(ツ)_/¯ (╯°□°）╯︵┻━┻ A.B a.B ab.CD AB. ABC. x. X.",
    "\n\n  leading\tand\u00a0odd\u2009spaces\u200bzero-width  end  \n",
]


def test_tokenizer_is_spacys_on_tricky_text():
    """datatrove_words (our compiled re-implementation) == datatrove's split_into_words (spaCy)."""
    for text in TRICKY:
        assert datatrove_words(text) == _spacy_words(text), text


def test_tokenizer_is_spacys_on_random_strings():
    """Random strings built from the pieces the rules care about (prefixes, suffixes, infixes, exceptions,
    URLs, units, currencies, scripts): both tokenizers agree on every one (the eval's 6,548 documents and
    90,000 such strings agree too)."""
    rng = random.Random(13)
    pieces = (list("aAbzZ09 5.,:;!?'\"-–—~+*^/<>=@#$%&()[]{}_|\\`´’‘“”«»…°£€¥§·") + ["\n", "  ", "http://", "www.",
              ".com", ".co.uk", "://", "Mr.", "U.S.", "don't", "n't", "'s", "''", ":)", ":-)", "km", "US$", "C$", "10",
              "192.168.1.1", "172.16.0.1", ":8080", "é", "ß", "Ω", "ж", "中", "한", "ا", "🙂", "©", "°F", "°C.", "a.m.",
              "e.g.", "etc.", "vs.", "'em", "cannot", "gonna", "im", "dont", "..", "...", "--", "---", "——", "3pm",
              "10am", "l'année", "C++", "+1", "1-2", "a-b", "1/2", "x:y", "x=y", "a,b", "1,000", "A.B", "a.B", "AB.",
              "X.", "Ph.D.", "<3", "\t", "\u00a0", "\u200b", "ǅ"])
    bad = []
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        if datatrove_words(text) != _spacy_words(text):
            bad.append(text)
    assert not bad, bad[:5]


def test_shipped_tables_are_the_installed_spacys():
    """data/dtwords_tables.json was built from spaCy's rules and datatrove's sets: a fresh build from the installed
    versions gives the same exceptions, matcher patterns, affix literals and character classes (classes
    checked on the BMP's first 0x3100 code points and 20,000 random others, a full build takes ~15 s)."""
    from curate.signals.dtwords_build import build

    TABLES = load_tables()
    rng = random.Random(7)
    sample = sorted(set(range(0x3100)) | {rng.randrange(0x3100, 0x110000) for _ in range(20000)})
    fresh = build(sample)
    for key in ("MULTI_PREFIX", "SUFFIX_LITERALS", "SPECIALS", "MATCHER", "STOP_WORDS"):
        assert fresh[key.lower()] == _normal(TABLES[key.lower()]), key
    inside = set(sample)
    for name, ranges in TABLES["classes"].items():
        shipped = {c for lo, hi in ranges for c in range(lo, hi + 1) if c in inside}
        assert shipped == {c for lo, hi in fresh["classes"][name] for c in range(lo, hi + 1) if c in inside}, name


def _normal(value):
    return [tuple(x) if isinstance(x, (list, tuple)) else x for x in value] if isinstance(value, list) else value


SYNTHETIC = {
    # name: text; each trips one rule (or none) of datatrove's filters
    "prose": ("The quick brown fox jumps over the lazy dog and then runs to the river with the other animals. " * 3
              + "It was a sunny day, and everyone in the village had gathered near the old mill to watch.\n") * 2
             + "Nobody expected that the small fox would have such a following of admirers by the end of the summer.",
    "hyphen_bullets": "\n".join(f"- item number {i} of the list that goes on and on with the words" for i in range(12)),
    "trailing_space": "\n".join(f"This is line {i} of the text and it ends with a period. " for i in range(12)),
    "chinese_marks": "\n".join("这是一个很长的句子，它以中文句号结束。" * 3 for _ in range(6)),
    "hashes": " ".join(f"#tag{i} word and the of" for i in range(40)),
    "no_stop_words": " ".join(["The Cat sat on a Mat"] * 20),
    "short": "Too short to keep.",
    "repeated_lines": "\n".join(["A line that repeats itself over and over again, with the same words."] * 8
                                + [f"A different line number {i} about the village and the fox." for i in range(4)]),
    "ellipses": "\n".join(f"and then the story went on and on {i}..." for i in range(20)),
    "newlines": "\n".join("the end of it" for _ in range(60)),
    "digits": " ".join(str(1000 + i) for i in range(200)) + " the of and",
    "abbreviations": ("Mr. and Mrs. Smith of the U.S. met Dr. Jones at 10 a.m. on Sept. 5 with the Co. and Inc. "
                      "people to have a talk. ") * 6,
    "contractions": ("I don't think we can't, and they won't: it's the time that we've had with the others. ") * 8,
    "concatenation": "ab c a bc " * 40 + "the end of the story and of that with the rest.",
}


def test_word_stats_are_datatroves():
    """Every field of dt_words equals what datatrove computes from split_into_words."""
    from datatrove.pipeline.filters.gopher_quality_filter import STOP_WORDS
    from datatrove.pipeline.filters.gopher_repetition_filter import find_all_duplicate, find_top_duplicate, get_n_grams
    from datatrove.utils.text import PUNCTUATION_SET

    texts = list(SYNTHETIC.values()) + TRICKY + ["", "a", "a b", "x " * 3]
    rows = datatrove_word_stats(pa.array(texts + [None], pa.large_string())).to_pylist()
    assert rows[-1] is None
    for text, row in zip(texts, rows):
        w = _spacy_words(text)
        ns = [x for x in w if any(ch not in PUNCTUATION_SET for ch in x)]
        expected = {"words": len(w), "non_symbol_words": len(ns), "non_symbol_chars": sum(map(len, ns)),
                    "alpha_words": sum(any(c.isalpha() for c in x) for x in w),
                    "stop_words": len(set(STOP_WORDS) & set(w))}
        for n in (2, 3, 4):
            grams = get_n_grams(w, n)
            expected[f"top_{n}gram_chars"] = find_top_duplicate(grams) if grams else 0
        for n in range(5, 11):
            expected[f"dupe_{n}gram_chars"] = find_all_duplicate(w, n)
        assert row == expected, text[:60]


def test_recipes_read_dt_words_and_datatrove_character_sets():
    from datatrove.pipeline.filters.gopher_quality_filter import STOP_WORDS
    from datatrove.utils.text import PUNCTUATION_SET, TERMINAL_PUNCTUATION

    rules = {r.name: r.predicate for rs in P.our_recipes().values() for r in rs}
    # the word rules read the dt_words struct, no recipe splits words itself
    assert not any("regexp_extract_all" in p for p in rules.values())
    for name in ("gopher_quality.word_count", "gopher_quality.alphabetic_words", "gopher_quality.stop_words",
                 "gopher_repetition.top_2gram", "gopher_repetition.dupe_10grams", "fineweb.newline_ratio"):
        assert "dt_words." in rules[name], name
    # fineweb.line_punctuation's marks are datatrove's TERMINAL_PUNCTUATION
    marks_sql = rules["fineweb.line_punctuation"].split("contains(", 1)[1].split(", right(", 1)[0]
    (marks,) = duckdb.sql(f"SELECT {marks_sql}").fetchall()[0]
    assert sorted(marks) == sorted(TERMINAL_PUNCTUATION)
    # the kernel's non-symbol test is datatrove's PUNCTUATION_SET, its stop words Gopher's
    TABLES = load_tables()
    shipped = {chr(c) for lo, hi in TABLES["classes"]["PUNCT"] for c in range(lo, hi + 1)}
    assert shipped == {c for c in PUNCTUATION_SET if len(c) == 1}
    assert sorted(TABLES["stop_words"]) == sorted(STOP_WORDS)


def test_synthetic_documents_fail_the_same_rule_as_datatrove():
    from datatrove.data import Document
    from datatrove.pipeline.filters import FineWebQualityFilter, GopherQualityFilter, GopherRepetitionFilter

    names = list(SYNTHETIC)
    ours, _ = P.our_reasons([SYNTHETIC[n] for n in names])
    filters = {"gopher_quality": GopherQualityFilter(), "gopher_repetition": GopherRepetitionFilter(),
               "fineweb": FineWebQualityFilter()}
    mismatches = []
    for recipe, f in filters.items():
        for k, name in enumerate(names):
            result = f.filter(Document(text=SYNTHETIC[name], id=name))
            theirs = None if result is True else (result[1] if isinstance(result, tuple) else "removed")
            mine = ours[recipe][k]
            if (mine is None) != (theirs is None) or (mine is not None and theirs not in REASONS[mine]):
                mismatches.append((recipe, name, mine, theirs))
    assert not mismatches, mismatches
