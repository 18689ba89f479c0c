"""The compiled word split and hashes against the plain-Python reference, on awkward Unicode."""

import random
import unicodedata

import numpy as np
import pyarrow as pa
import pytest

from curate.decontam.ngrams import gram_hashes
from curate.decontam.normalize import ALONE, ASSIGNED, MULTI, N_CODEPOINTS, WORD, normalize, tables, word_hashes
from decontam.planted import ref_words

PIECES = ["Café", "naïve", "don’t", "don't", "U.S.A.", "well-known", "ÉTÉ", "ß", "İstanbul", "東京", "🙂", "x\u0301", "12.5%",
          "—", "«quoted»", "tab\there", "nbsp\u00a0space", "em\u2003space", "line\nbreak", "ǅemal", "", "A", "a",
          "ＦＵＬＬ", "ﬁne", "㍻", "½", "ｶﾞｷﾞ", "ガ", "カ\u3099", "한국어", "\u1112\u1161\u11ab", "สวัสดี", "ໄປ", "ភាសា", "မြန်မာ", "བོད",
          "ꆈꌠ", "ㄅㄆ", "漢字かな交じり文", "ﻻ", "क़", "क\u093c", "Ἀθῆναι", "Ёж", "e\u0323\u0301", "\u1ec7", "Ⅻ", "①", "¨"]

# One passage per script, each in forms a crawl may hold it in: the same words whatever the form.
SCRIPTS = {"latin": "Café déjà vu, naïve ÉTÉ à l'œuvre", "vietnamese": "Tiếng Việt có dấu rất đẹp",
           "greek": "Ἀθῆναι ΕΛΛΆΔΑ ὀδυσσεύς", "cyrillic": "Йошкар-Ола ёлка Ёж", "korean": "한국어 텍스트는 띄어쓰기를 합니다",
           "japanese": "データベースのガイド、パピプ", "chinese": "中华人民共和国成立于一九四九年。", "thai": "สวัสดีครับ ภาษาไทย",
           "arabic": "ﻻ إِلَٰهَ إلا", "devanagari": "क़ख़ग़ हिन्दी", "hebrew": "שָׁלוֹם עוֹלָם"}
FULLWIDTH = {chr(c): chr(c + 0xFEE0) for c in range(0x21, 0x7F)} | {" ": "\u3000"}
HALFWIDTH_KATAKANA = "ﾃﾞｰﾀﾍﾞｰｽのｶﾞｲﾄﾞ、ﾊﾟﾋﾟﾌﾟ"


def hashes(texts: list[str]) -> list[tuple[int, ...]]:
    words = word_hashes(pa.array(texts, pa.string()))
    return [tuple(words.hash[words.bounds[d]:words.bounds[d + 1]].tolist()) for d in range(len(texts))]


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_every_unicode_form_of_a_passage_gives_the_same_words(script):
    text = SCRIPTS[script]
    forms = [text, *(unicodedata.normalize(f, text) for f in ("NFC", "NFD", "NFKC", "NFKD")), text.upper(),
             "".join(FULLWIDTH.get(c, c) for c in text)]
    if script == "japanese":
        forms.append(HALFWIDTH_KATAKANA)
    got = hashes(forms)
    assert all(h == got[0] for h in got), [normalize(f) for f in forms]
    assert normalize(text) == ref_words(text) and len(got[0]) == len(ref_words(text))


def test_scripts_without_spaces_are_split_into_characters():
    assert normalize("中华人民共和国成立。") == list("中华人民共和国成立")
    assert normalize("東京大学でAI研究") == ["東", "京", "大", "学", "て", "ai", "研", "究"]   # a mark is dropped: で is て
    assert len(normalize(SCRIPTS["thai"])) > 10
    assert normalize("ＡＢＣ　ｄｅｆ ﬁﬂ ß İ") == ["abc", "def", "fifl", "ss", "i"]
    assert normalize("é") == normalize("e\u0301") == normalize("E\u0301") == ["e"]
    assert normalize("don´t") == ["dont"], "a spacing accent is a symbol: dropped, it splits nothing"


def test_the_tables_fold_to_fixed_points_and_skip_only_unassigned_planes():
    t = tables()
    folds = np.flatnonzero((t.kind == WORD) | (t.kind == ALONE))
    targets = np.concatenate([t.fold[folds], t.multi])
    assert ((t.kind[targets] == WORD) | (t.kind[targets] == ALONE)).all() and (t.fold[targets] == targets).all()
    assert (t.kind[t.multi] == t.multi_kind).all()
    assert (t.kind == MULTI).sum() > 1000
    rest = np.ones(N_CODEPOINTS, dtype=bool)
    for lo, hi in ASSIGNED:
        rest[lo:hi] = False
    chars = np.flatnonzero(rest).astype("<u4").tobytes().decode("utf-32-le")
    assert set(map(unicodedata.category, chars)) <= {"Cn", "Co", "Cf", "Mn"} and not any(map(str.isspace, chars))


def test_words_and_spans_agree_with_the_reference():
    rng = random.Random(3)
    texts = [" ".join(rng.choice(PIECES) for _ in range(rng.randint(0, 12))) for _ in range(300)] + [None, ""]
    words = word_hashes(pa.array(texts, pa.string()))
    seen: dict[str, int] = {}
    for d, text in enumerate(texts):
        ref = ref_words(text or "")
        lo, hi = words.bounds[d], words.bounds[d + 1]
        assert normalize(text or "") == ref
        assert hi - lo == len(ref)
        raw = (text or "").encode()
        for w, h, a, b in zip(ref, words.hash[lo:hi], words.start[lo:hi], words.end[lo:hi]):
            assert seen.setdefault(w, int(h)) == int(h), "one word, one hash"
            written = raw[a:b].decode()
            assert ref_words(written) == [w] or (len(written) == 1 and w in ref_words(written)), "the span is the word as written"
    assert len(set(seen.values())) == len(seen), "different words, different hashes"


def test_grams_never_cross_texts_and_equal_sequences_hash_equal():
    words = word_hashes(pa.array(["a b c", "d e f g", "A, B. c!", "x"]))
    hashes, first = gram_hashes(words, 3)
    assert first.tolist() == [0, 3, 4, 7]
    assert hashes[0] == hashes[3] and len(np.unique(hashes)) == 3


def test_the_compiled_lookup_finds_exactly_the_numpy_grams_in_the_index():
    from curate.decontam.evalsets import EvalItem
    from curate.decontam.index import EvalIndex

    rng = random.Random(5)
    vocab = [f"w{i}" for i in range(30)]   # a small vocabulary: many grams repeat across texts
    texts = [" ".join(rng.choice(vocab) for _ in range(rng.randint(0, 40))) for _ in range(200)]
    items = [EvalItem("s", str(i), (t,)) for i, t in enumerate(texts[:60]) if t]
    index = EvalIndex(items, ["s"], 5, 3)
    matches = index.scan(pa.array([str(i) for i in range(len(texts))]), pa.array(texts))
    words = word_hashes(pa.array(texts))
    want = set()
    for k in index.lengths:
        hashes, first = gram_hashes(words, k)
        hit = np.isin(hashes, index.keys)
        doc = words.doc[first[hit]]
        want |= set(zip(doc.tolist(), (first[hit] - words.bounds[doc]).tolist(), [k] * int(hit.sum()), hashes[hit].tolist()))
    got = set(zip(map(int, matches.column("id").to_pylist()), matches.column("pos").to_pylist(), matches.column("k").to_pylist(),
                  matches.column("gram").to_pylist()))
    assert got == want and len(want) > 100 and len(index.lengths) > 1
