"""The dual-use blocklist (stage 1 of Deep Ignorance): distinct case-folded terms per document."""

from __future__ import annotations

import pickle
import random

import numpy as np
import pyarrow as pa
import pytest

from curate.dualuse import Blocklist, demo_terms_path, fingerprint, load_terms
from curate.dualuse import automaton as automaton_mod
from curate.errors import CurateError

TERMS = ["varroa mite", "queen excluder", "bee", "beehive", "hive", "hive tool", "propolis"]


def reference(terms, text) -> set[str]:
    """The definition: which (normalised) terms are substrings of the case-folded text."""
    if not text:
        return set()
    folded = text.casefold()
    return {t for t in terms if t in folded}


def check_against_reference(bl: Blocklist, texts: list[str | None]) -> None:
    counts, lists = bl.scan(pa.array(texts, type=pa.string()))
    expected = [reference(bl.terms, t) for t in texts]
    assert counts.dtype == np.int32
    assert counts.tolist() == [len(e) for e in expected]
    assert lists.to_pylist() == [sorted(e) for e in expected]
    assert bl.count(pa.array(texts, type=pa.string())).tolist() == [len(e) for e in expected]


# ---------------------------------------------------------------- counting


def test_repeated_terms_count_once():
    bl = Blocklist(TERMS)
    texts = pa.array(["propolis propolis PROPOLIS and more propolis", "varroa mite, varroa mite", "nothing here"])
    assert bl.count(texts).tolist() == [1, 1, 0]


def test_overlapping_terms_all_count():
    bl = Blocklist(TERMS)
    # "beehive" contains "bee", "hive" and "beehive"; "beehive tool" also "hive tool"
    counts, lists = bl.scan(pa.array(["a beehive", "the hive tool", "beehive tool"]))
    assert counts.tolist() == [3, 2, 4]
    assert lists.to_pylist() == [["bee", "beehive", "hive"], ["hive", "hive tool"],
                                 ["bee", "beehive", "hive", "hive tool"]]
    # terms that share a suffix end at the same position: "he", "she", "hers" in "ushers"
    assert Blocklist(["he", "she", "hers", "his"]).scan(pa.array(["ushers"]))[1].to_pylist() == [["he", "hers", "she"]]


def test_case_folding_ascii_and_unicode():
    bl = Blocklist(["Varroa Mite", "straße", "σοφία", "ﬃ", "kelvin"])
    assert bl.terms == ("ffi", "kelvin", "strasse", "varroa mite", "σοφία")  # folded, sorted
    texts = [
        "VARROA MITE",  # ASCII upper
        "STRASSE",  # "straße" folds to "strasse"
        "Straße",  # expansion inside the text: ß -> ss
        "ΣΟΦΊΑ and σοφία and ΣΟΦΙΑ",  # capital sigma; the accentless form is another word
        "oﬃce and OFFICE",  # the ligature folds to "ffi"; "OFFICE" folds to "office" which contains it too
        "\u212aelvin",  # KELVIN SIGN folds to "k"
        "STRA\u00dfE",  # ß between capitals
    ]
    assert bl.count(pa.array(texts)).tolist() == [1, 1, 1, 1, 1, 1, 1]
    check_against_reference(bl, texts)
    # a final sigma and a capital sigma fold to the same letter
    assert Blocklist(["σς"]).count(pa.array(["ΣΣ", "σσ", "ςς"])).tolist() == [1, 1, 1]
    # dotted capital I expands to "i" + COMBINING DOT ABOVE: "i̇stanbul" matches, plain "istanbul" does not
    assert Blocklist(["\u0130stanbul"]).count(pa.array(["İSTANBUL", "istanbul"])).tolist() == [1, 0]


def test_null_and_empty_texts():
    bl = Blocklist(TERMS)
    counts, lists = bl.scan(pa.array([None, "", "propolis", None, "   "], type=pa.string()))
    assert counts.tolist() == [0, 0, 1, 0, 0]
    assert lists.to_pylist() == [[], [], ["propolis"], [], []]
    assert bl.count(pa.nulls(3)).tolist() == [0, 0, 0]
    assert bl.count(pa.array([], type=pa.string())).tolist() == []


def test_stop_at_caps_the_count_and_keeps_the_decision():
    bl = Blocklist(TERMS + ["honey super", "smoker fuel"])
    texts = pa.array([
        "beehive",  # 3 terms at one position
        "varroa mite near the queen excluder, then a hive tool and propolis",
        "just propolis",
        "",
        None,
        "honey super honey super",
    ])
    full = bl.count(texts)
    assert full.tolist() == [3, 5, 1, 0, 0, 1]
    for k in (1, 2, 3, 10):
        capped = bl.count(texts, stop_at=k)
        assert capped.tolist() == np.minimum(full, k).tolist()
        assert ((capped >= k) == (full >= k)).all()
    assert bl.escalate(texts).tolist() == (full >= 2).tolist()
    assert bl.escalate(texts, escalate_at=4).tolist() == [False, True, False, False, False, False]
    with pytest.raises(ValueError):
        bl.count(texts, stop_at=0)


# ---------------------------------------------------------------- inputs


def test_arrow_layouts_give_the_same_counts():
    bl = Blocklist(TERMS)
    base = pa.array(["bee", None, "a beehive", "varroa mite and propolis", "", "HIVE TOOL"])
    expected = [1, 0, 3, 2, 0, 2]
    assert bl.count(base).tolist() == expected
    assert bl.count(base.slice(2, 3)).tolist() == expected[2:5]  # non-zero offset
    assert bl.count(base.cast(pa.large_string())).tolist() == expected
    assert bl.count(base.cast(pa.string_view())).tolist() == expected
    assert bl.count(pa.chunked_array([base.slice(0, 2), base.slice(2)])).tolist() == expected
    assert bl.count(base.to_pylist()).tolist() == expected
    counts, lists = bl.scan(pa.chunked_array([base.slice(0, 3), base.slice(3)]))
    assert counts.tolist() == expected
    assert lists.to_pylist() == bl.scan(base)[1].to_pylist()
    with pytest.raises(CurateError, match="must be strings"):
        bl.count(pa.array([1, 2]))


def test_invalid_utf8_bytes_match_nothing():
    # Arrow validates strings on most paths; unchecked buffers decode as U+FFFD per bad byte
    data = b"bee\xffhive" + b"propolis\xc3"
    arr = pa.Array.from_buffers(pa.string(), 2, [None, pa.py_buffer(np.array([0, 8, 17], np.int32).tobytes()),
                                                 pa.py_buffer(data)])
    counts, lists = Blocklist(TERMS).scan(arr)
    assert lists.to_pylist() == [["bee", "hive"], ["propolis"]]


def test_many_terms_in_one_document_grow_the_pair_buffers():
    rng = random.Random(3)
    terms = sorted({"".join(rng.choice("abcdefghij") for _ in range(6)) for _ in range(700)})
    texts = [" ".join(rng.sample(terms, 600)) for _ in range(5)] + ["", " ".join(terms)]
    check_against_reference(Blocklist(terms), texts)  # 4,000+ pairs: past the first buffer, rolled back and resumed


# ---------------------------------------------------------------- against the definition


def _generated(seed: int, n_texts: int):
    rng = random.Random(seed)
    words = ["bee", "hive", "brood", "comb", "queen", "cell", "straße", "STRASSE", "ſtar", "ﬁeld", "İzmir",
             "ΣΟΦΙΑ", "σοφια", "ς", "K", "\u212a", "日本語", "🐝", "e\u0301", "é", "ǰ", "ŉ", "ᾳ", "ΐ", "Ꭰ", "ꭰ",
             "Ǆ", "ǅ", "ǆ", "smoker", "fuel", "-", "'"]
    seps = [" ", "", "\n", ", ", "  "]
    terms = ["bee", "beehive", "hive", "brood comb", "queen cell", "strasse", "straße", "star", "field", "i̇zmir",
             "σοφια", "σς", "k", "日本", "本語", "🐝", "é", "e\u0301", "j\u030c", "ʼn", "αι", "ꭰ", "ǆ", "ee",
             "smoker fuel", "comb-", "'s", "ss", "fi", "st"]
    texts = []
    for _ in range(n_texts):
        parts = []
        for _ in range(rng.randrange(0, 30)):
            w = rng.choice(words)
            w = w.upper() if rng.random() < 0.2 else w.title() if rng.random() < 0.2 else w
            parts += [w, rng.choice(seps)]
        texts.append("".join(parts) if rng.random() > 0.05 else None)
    return terms, texts


def test_equals_the_python_reference_on_generated_texts():
    terms, texts = _generated(0, 400)
    bl = Blocklist(terms)
    check_against_reference(bl, texts)
    full = bl.count(pa.array(texts, type=pa.string()))
    assert (full >= 2).any() and (full == 0).any()  # the texts exercise both sides of the threshold
    assert bl.count(pa.array(texts, type=pa.string()), stop_at=2).tolist() == np.minimum(full, 2).tolist()


@pytest.mark.parametrize("row_depth", [0, 6])
def test_many_overlapping_terms_on_a_small_alphabet(monkeypatch, row_depth):
    """Long failure-link and output chains: every term is a substring of many others."""
    rng = random.Random(7)
    terms = ["".join(rng.choice("abcß") for _ in range(rng.randint(1, 7))) for _ in range(250)]
    texts = ["".join(rng.choice("abcABCßẞ ") for _ in range(rng.randint(0, 80))) for _ in range(300)]
    monkeypatch.setattr(automaton_mod, "ROW_DEPTH", row_depth)
    bl = Blocklist(terms)
    assert bl.automaton.max_outputs >= 4
    check_against_reference(bl, texts)
    full = bl.count(pa.array(texts))
    for k in (1, 2, 5):
        assert bl.count(pa.array(texts), stop_at=k).tolist() == np.minimum(full, k).tolist()


@pytest.mark.parametrize("row_depth", [0, 2, 99])
def test_every_automaton_layout_gives_the_same_results(monkeypatch, row_depth):
    """Chain states (row_depth 0: only the root and forks have rows; 99: every state has one) and
    classes left out of the rows (a tiny budget) all agree with the definition."""
    terms, texts = _generated(1, 300)
    monkeypatch.setattr(automaton_mod, "ROW_DEPTH", row_depth)
    full = Blocklist(terms)
    a = full.automaton
    assert a.n_dense == a.n_classes
    assert (a.n_rows == a.n_states) == (row_depth == 99)
    check_against_reference(full, texts)
    for budget in (1, 4 * 8 * a.n_rows):  # only classes 0 and 1 in the rows, then eight
        monkeypatch.setattr(automaton_mod, "DENSE_TABLE_BYTES", budget)
        small = Blocklist(terms)
        assert small.automaton.n_dense < small.automaton.n_classes
        check_against_reference(small, texts)


def test_pickled_blocklist_ships_terms_and_rebuilds():
    bl = Blocklist(TERMS)
    texts = pa.array(["beehive", "varroa mite and propolis"])
    before = bl.count(texts)
    state = pickle.dumps(bl)
    assert len(state) < 1000  # the term list, not the automaton
    clone = pickle.loads(state)
    assert clone.terms == bl.terms and clone.fingerprint == bl.fingerprint
    assert clone.count(texts).tolist() == before.tolist() == [3, 2]


# ---------------------------------------------------------------- terms


def test_load_terms_comments_blank_lines_and_dedup(tmp_path):
    path = tmp_path / "terms.txt"
    path.write_text("\ufeff# header comment\n\n  Varroa Mite  \nqueen excluder\n   # indented comment\n"
                    "VARROA MITE\nc# hive\r\nStraße\nstrasse\n\t\n", encoding="utf-8")
    assert load_terms(str(path)) == ["varroa mite", "queen excluder", "c# hive", "strasse"]


def test_load_terms_errors_name_the_path(tmp_path):
    missing = tmp_path / "nope.txt"
    with pytest.raises(CurateError, match=f"{missing}: not found"):
        load_terms(str(missing))
    empty = tmp_path / "empty.txt"
    empty.write_text("# only a comment\n\n")
    with pytest.raises(CurateError, match=f"{empty}: no terms"):
        load_terms(str(empty))
    with pytest.raises(CurateError, match="no terms"):
        Blocklist(["  ", ""])


def test_demo_terms_are_a_labelled_beekeeping_stand_in():
    path = demo_terms_path()
    with open(path, encoding="utf-8") as f:
        header = f.read().split("\n\n")[0].lower()
    assert "stand-in" in header and "not a real dual-use list" in header
    terms = load_terms(path)
    assert 25 <= len(terms) <= 40 and "varroa mite" in terms
    bl = Blocklist.from_file(path)
    page = "Check the brood comb for Varroa Mites before adding a honey super."
    assert bl.scan(pa.array([page]))[1].to_pylist() == [["brood comb", "honey super", "varroa mite"]]
    assert bl.escalate(pa.array([page, "A bee on a flower."])).tolist() == [True, False]


def test_fingerprint_follows_the_term_set():
    a = Blocklist(["bee", "Hive", "propolis"])
    same = Blocklist(["propolis", "HIVE ", "bee", "bee"])
    assert a.fingerprint == same.fingerprint == fingerprint(["hive", "bee", "propolis"])
    assert a.fingerprint != Blocklist(["bee", "hive"]).fingerprint
    assert a.fingerprint != Blocklist(["bee", "hive", "propolis", "wax"]).fingerprint
    assert len(a.fingerprint) == 64
