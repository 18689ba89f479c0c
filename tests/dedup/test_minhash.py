"""MinHash signatures and band keys (curate.dedup): datasketch bit-for-bit equality, determinism,
band keys, near-duplicate recall, band choice, S-curve, unicode, empty and short texts."""

from __future__ import annotations

import hashlib
import json
import os
import random
import string
import subprocess
import sys
import unicodedata
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from datasketch import MinHash, MinHashLSH
from datasketch.hashfunc import sha1_hash32

from curate.dedup import (
    PRESETS,
    MinHasher,
    Shingling,
    band_keys,
    choose_bands,
    compute_signatures,
    format_s_curve,
    get_preset,
    normalizer,
    permutation_params,
    python_hashfunc,
    reference_minhash,
    rpv2_bands,
    s_curve,
)
from curate.dedup.hashes import murmur3_32, murmur3_32_py, poly64_32, poly64_32_py, sha1_32
from curate.dedup.normalize import DATATROVE_PUNCTUATION, STEPS
from curate.dedup.presets import RPV2_BANDS

ROOT = Path(__file__).resolve().parents[2]
DOLMA = ROOT.parent / "shared" / "data" / "dolma" / "formats" / "CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"
MAX32 = np.uint32(0xFFFFFFFF)

# -------------------------------------------------------------------------------------------------
# Varied documents, made here (no downloads)
# -------------------------------------------------------------------------------------------------

WORDS = ("the of and to in is was for on that with as by at from his her it an were are which this be "
         "data model training corpus web page text filter quality language duplicate near exact token "
         "cannot don't it's U.S. e-mail co-operate 1,234.5 2024 3.14 #hashtag @user http://example.com/x?y=1").split()
ACCENTED = "café naïve résumé Zürich São Ångström façade déjà-vu Ελλάδα Москва".split()
CJK = ["中文", "文本", "去重", "数据", "模型", "训练", "日本語", "テキスト", "한국어", "텍스트"]
EMOJI = ["😀", "🚀", "👍🏽", "🇫🇷", "👨‍👩‍👧", "❤️", "🎉"]
OTHER = ["١٢٣", "٣.١٤", "مرحبا", "שלום", "नमस्ते", "e\u0301", "ﬁ", "Ⅻ", "\u00a0", "\u3000", "—", "…", "“quoted”"]
SEPS = [" ", " ", " ", " ", "\n", "\t", "  ", ", ", ". ", "! ", "\n\n", " - ", "\u00a0"]


def make_docs(count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    pools = [WORDS] * 6 + [ACCENTED, CJK, EMOJI, OTHER]
    docs = ["", " ", "\n\t ", "!!!", "a", "ab c", "x" * 24, "y" * 25, "z" * 26, "中文文本", "😀" * 30,
            "短", "word " * 12, "word " * 13, "one two three four", "e\u0301" * 20]
    while len(docs) < count:
        length = rng.choice([3, 8, 20, 60, 150, 400])
        parts = []
        for _ in range(length):
            parts.append(rng.choice(rng.choice(pools)))
            parts.append(rng.choice(SEPS))
        text = "".join(parts)
        if rng.random() < 0.2:
            text = text.upper()
        docs.append(text)
    return docs


DOCS = make_docs(320)


def ds_values(m) -> np.ndarray:
    return np.asarray(m.hashvalues).astype(np.uint32)


def datasketch_signature(text: str, spec, batch: bool = False) -> np.ndarray:
    """datasketch.MinHash(num_perm, seed, hashfunc=sha1_hash32).update(shingle) for each shingle
    (``update_batch`` when ``batch``: the same values, faster on long documents)."""
    m = MinHash(num_perm=spec.num_perm, seed=spec.seed, scheme=spec.scheme, hashfunc=sha1_hash32)
    shingles = [s.encode("utf-8") for s in spec.shingling.shingle_strings(text)]
    if batch:
        m.update_batch(shingles)
    else:
        for s in shingles:
            m.update(s)
    return ds_values(m)


# -------------------------------------------------------------------------------------------------
# Hashes and permutations
# -------------------------------------------------------------------------------------------------

def test_shingle_hashes_match_references():
    rng = random.Random(1)
    w = np.zeros(16, np.uint64)
    buf = np.zeros(128, np.uint8)
    lengths = list(range(0, 140)) + [rng.randrange(140, 700) for _ in range(20)]
    for n in lengths:
        b = bytes(rng.randrange(256) for _ in range(n))
        arr = np.frombuffer(b"pad" + b + b"pad", dtype=np.uint8)
        seed = rng.randrange(2**32)
        assert int(sha1_32(arr, 3, n, w, buf)) == sha1_hash32(b)
        assert int(murmur3_32(arr, 3, n, seed)) == murmur3_32_py(b, seed)
        assert int(poly64_32(arr, 3, n, seed)) == poly64_32_py(b, seed)
    # MurmurHash3_x86_32 published test vectors
    for data, seed, expected in [(b"", 0, 0), (b"", 1, 0x514E28B7), (b"", 0xFFFFFFFF, 0x81F16F39),
                                 (b"test", 0, 0xBA6BD213), (b"Hello, world!", 0, 0xC0363E43),
                                 (b"The quick brown fox jumps over the lazy dog", 0, 0x2E4FF723)]:
        assert murmur3_32_py(data, seed) == expected


@pytest.mark.parametrize("scheme", ["legacy", "affine32"])
def test_permutations_equal_datasketch(scheme):
    for num_perm, seed in [(128, 1), (128, 10), (128, 42), (112, 1), (7, 123)]:
        a, b = permutation_params(num_perm, seed, scheme)
        da, db = MinHash(num_perm=num_perm, seed=seed, scheme=scheme).permutations
        assert np.array_equal(a, np.asarray(da, dtype=np.uint64))
        assert np.array_equal(b, np.asarray(db, dtype=np.uint64))


# -------------------------------------------------------------------------------------------------
# Bit-for-bit equality with datasketch
# -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("preset,scheme", [("zyda2", "affine32"), ("zyda2", "legacy"), ("zyda1", "legacy"),
                                           ("rpv2", "legacy"), ("fineweb", "affine32")])
def test_datasketch_compatible_bit_for_bit(preset, scheme):
    """Several hundred varied documents (unicode, emoji, short, empty, long), datasketch's own sha1_hash32."""
    spec = get_preset(preset, scheme=scheme).datasketch_compatible()
    sigs = compute_signatures(DOCS, spec)
    assert sigs.values.shape == (len(DOCS), spec.num_perm) and sigs.values.dtype == np.uint32
    for i, text in enumerate(DOCS):
        expected = datasketch_signature(text, spec, batch=spec.shingling.unit == "char")
        assert np.array_equal(sigs.values[i], expected), (preset, scheme, i, text[:60])
        assert sigs.n_shingles[i] == len(spec.shingling.shingle_strings(text))


@pytest.mark.parametrize("hash_name", ["poly64", "murmur3"])
@pytest.mark.parametrize("preset", ["zyda2", "fineweb"])
def test_fast_hashes_equal_datasketch_with_same_hashfunc(preset, hash_name):
    """The fast modes are datasketch MinHash too, given the same (pure-Python) shingle hash."""
    spec = get_preset(preset, hash=hash_name, hash_seed=7)
    docs = DOCS[:80]
    sigs = compute_signatures(docs, spec)
    for i, text in enumerate(docs):
        m = MinHash(num_perm=spec.num_perm, seed=spec.seed, scheme=spec.scheme,
                    hashfunc=python_hashfunc(hash_name, 7))
        m.update_batch([s.encode("utf-8") for s in spec.shingling.shingle_strings(text)])
        assert np.array_equal(sigs.values[i], ds_values(m)), (preset, hash_name, i)
        assert np.array_equal(sigs.values[i], ds_values(reference_minhash(text, spec)))


def test_char_shingles_are_python_code_point_slices():
    text = "ab中文😀e\u0301👨‍👩‍👧xyz"
    sh = Shingling("char", 4)
    assert sh.shingle_strings(text) == [text[i:i + 4] for i in range(len(text) - 3)]
    sigs = compute_signatures([text], get_preset("zyda2", n=4))
    assert sigs.n_shingles[0] == len(text) - 3


@pytest.mark.parametrize("unit,n", [("char", 1), ("char", 3), ("word", 1), ("word", 2), ("word", 40)])
def test_other_shingle_sizes_and_long_shingles(unit, n):
    spec = get_preset("zyda2", unit=unit, n=n, normalize=("lower", "collapse_ws") if unit == "word" else ())
    long_word = "x" * 70_000 + "é"  # a word-shingle longer than the kernel's power table
    docs = DOCS[:40] + [long_word, long_word + " tail words here", "é" * 200]
    sigs = compute_signatures(docs, spec)
    for i, text in enumerate(docs):
        assert np.array_equal(sigs.values[i], ds_values(reference_minhash(text, spec))), (unit, n, i)


def test_spec_round_trip_and_validation():
    from curate.dedup import MinHashSpec

    for spec in PRESETS.values():
        assert MinHashSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    with pytest.raises(ValueError, match="hash_seed"):
        get_preset("zyda1", hash_seed=3)
    with pytest.raises(ValueError, match="unknown normalisation"):
        get_preset("zyda1", normalize=("lower", "stem"))
    with pytest.raises(ValueError, match="shingle unit"):
        get_preset("zyda1", unit="line")


def test_rpv2_matches_redpajama_generate_signature():
    """RedPajama-V2's own formula (app/src/dedupe/utils.py), written out with numpy."""
    spec = get_preset("rpv2")
    rng = np.random.RandomState(42)
    p = np.uint64((1 << 61) - 1)
    perms = np.array([(rng.randint(1, p, dtype=np.uint64), rng.randint(0, p, dtype=np.uint64))
                      for _ in range(128)], dtype=np.uint64).T
    docs = [d for d in DOCS if len(normalizer(spec.shingling.normalize)(d).split()) >= 13][:60]
    assert len(docs) >= 30
    sigs = compute_signatures(docs, spec)
    for i, text in enumerate(docs):
        words = normalizer(spec.shingling.normalize)(text).split()
        grams = {" ".join(words[j:j + 13]) for j in range(len(words) - 12)}
        h = np.array([sha1_hash32(g.encode("utf-8")) for g in grams], dtype=np.uint64)
        a, b = perms
        phv = np.bitwise_and(((h * np.tile(a, (len(h), 1)).T).T + b) % p, np.uint64(0xFFFFFFFF))
        expected = np.vstack([phv, np.full(128, 0xFFFFFFFF, np.uint64)]).min(axis=0).astype(np.uint32)
        assert np.array_equal(sigs.values[i], expected)


@pytest.mark.skipif(not DOLMA.exists(), reason="needs ../shared/data")
def test_real_web_pages_bit_for_bit():
    import gzip

    with gzip.open(DOLMA, "rt") as f:
        docs = [json.loads(line)["text"] for _, line in zip(range(60), f)]
    spec = get_preset("zyda2", scheme="affine32").datasketch_compatible()
    sigs = compute_signatures(pa.array(docs), spec)
    for i, text in enumerate(docs):
        assert np.array_equal(sigs.values[i], datasketch_signature(text, spec, batch=True))


# -------------------------------------------------------------------------------------------------
# Determinism
# -------------------------------------------------------------------------------------------------

def test_deterministic_across_calls_batches_layouts_and_threads():
    spec = get_preset("zyda2")
    whole = compute_signatures(DOCS, spec).values
    assert np.array_equal(whole, compute_signatures(DOCS, spec).values)
    # a document's signature does not depend on what else is in the batch
    half = len(DOCS) // 2
    parts = np.vstack([compute_signatures(DOCS[:half], spec).values, compute_signatures(DOCS[half:], spec).values])
    assert np.array_equal(whole, parts)
    order = list(range(len(DOCS)))
    random.Random(3).shuffle(order)
    shuffled = compute_signatures([DOCS[i] for i in order], spec).values
    assert np.array_equal(whole[order], shuffled)
    for i in (0, 17, 200):
        assert np.array_equal(whole[i], compute_signatures([DOCS[i]], spec).values[0])
    # Arrow layouts: string / large_string, sliced (non-zero offset), chunked
    arr = pa.array(DOCS, pa.string())
    assert np.array_equal(whole, compute_signatures(arr, spec).values)
    assert np.array_equal(whole[50:90], compute_signatures(arr.slice(50, 40), spec).values)
    chunked = pa.chunked_array([pa.array(DOCS[:7]), pa.array(DOCS[7:8]), pa.array(DOCS[8:])])
    assert np.array_equal(whole, compute_signatures(chunked, spec).values)
    # threads split the batch differently; results do not change
    big = DOCS * 4
    one = MinHasher(spec, threads=1)(big).values
    MinHasher.MIN_BYTES_PER_THREAD, saved = 1, MinHasher.MIN_BYTES_PER_THREAD
    try:
        assert np.array_equal(one, MinHasher(spec, threads=2)(big).values)
        assert np.array_equal(one, MinHasher(spec, threads=3)(big).values)
    finally:
        MinHasher.MIN_BYTES_PER_THREAD = saved


def test_deterministic_across_processes():
    """Another interpreter, another hash seed: the same signatures and band keys."""
    docs = DOCS[:40]
    spec = get_preset("fineweb")
    sigs = compute_signatures(docs, spec)
    digest = hashlib.sha256(sigs.values.tobytes() + band_keys(sigs, 14, 8).tobytes()).hexdigest()
    code = ("import sys, json, hashlib; from curate.dedup import compute_signatures, band_keys, get_preset; "
            "docs = json.load(sys.stdin); s = compute_signatures(docs, get_preset('fineweb')); "
            "print(hashlib.sha256(s.values.tobytes() + band_keys(s, 14, 8).tobytes()).hexdigest())")
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], input=json.dumps(docs), capture_output=True, text=True,
                         env=env, cwd=ROOT, check=True)
    assert out.stdout.strip() == digest


# -------------------------------------------------------------------------------------------------
# Band keys, near duplicates, band choice, S-curve
# -------------------------------------------------------------------------------------------------

def test_band_keys_shape_equality_and_inequality():
    spec = get_preset("zyda2")
    docs = DOCS[100:140] + [DOCS[120]]
    sigs = compute_signatures(docs, spec)
    keys = band_keys(sigs, spec.bands, spec.rows)
    assert keys.shape == (len(docs), 8) and keys.dtype == np.uint64
    assert np.array_equal(keys, MinHasher(spec).band_keys(sigs))
    assert np.array_equal(keys[-1], keys[20])  # identical documents: every band equal
    # unrelated documents share no band key, and keys never repeat across bands
    distinct = [i for i in range(len(docs) - 1) if sigs.n_shingles[i] > 30]
    flat = keys[distinct].reshape(-1)
    assert len(set(flat.tolist())) == flat.size
    # a key is a function of (band index, the band's rows) only
    same_rows = np.tile(sigs.values[:1, :16], (1, 8))
    k = band_keys(same_rows, 8, 16)
    assert len(set(k[0].tolist())) == 8
    # unused permutations past bands x rows do not matter (RPv2's 14 x 9 of 128)
    changed = sigs.values.copy()
    changed[:, 126:] = 0
    assert np.array_equal(band_keys(changed, 14, 9), band_keys(sigs.values, 14, 9))
    with pytest.raises(ValueError):
        band_keys(sigs.values, 9, 15)


def test_band_keys_odd_rows():
    sigs = compute_signatures(DOCS[150:170], get_preset("rpv2"))
    for b, r in RPV2_BANDS.values():
        keys = band_keys(sigs, b, r)
        assert keys.shape == (20, b)
        assert np.array_equal(keys, band_keys(sigs.values.copy(), b, r))


def test_near_duplicates_share_a_band_at_8x16():
    rng = random.Random(5)
    vocab = [w for w in WORDS if w.isalpha()] + ACCENTED
    spec = get_preset("zyda2")
    originals, edited, others = [], [], []
    for _ in range(100):
        words = [rng.choice(vocab) for _ in range(rng.randint(250, 400))]
        originals.append(" ".join(words))
        j = rng.randrange(len(words))
        words[j] = "replacement" if words[j] != "replacement" else "other"
        edited.append(" ".join(words))
        others.append(" ".join(rng.choice(vocab) for _ in range(300)))
    k1 = band_keys(compute_signatures(originals, spec), 8, 16)
    k2 = band_keys(compute_signatures(edited, spec), 8, 16)
    k3 = band_keys(compute_signatures(others, spec), 8, 16)
    caught = (k1 == k2).any(axis=1).mean()
    assert caught >= 0.95, caught
    assert (k1 == k3).any(axis=1).mean() <= 0.02


@pytest.mark.parametrize("threshold,expected", [(0.4, (32, 4)), (0.7, (14, 9)), (0.85, (8, 16))])
def test_choose_bands_matches_datasketch(threshold, expected):
    lsh = MinHashLSH(threshold=threshold, num_perm=128)
    assert choose_bands(threshold, 128) == (lsh.b, lsh.r) == expected


@pytest.mark.parametrize("num_perm", [64, 128])
def test_choose_bands_matches_datasketch_without_scipy(num_perm):
    """Our quadrature picks what datasketch's scipy integrals pick, across thresholds (the main install has no scipy)."""
    from datasketch.lsh import _optimal_param

    for threshold in np.arange(0.05, 1.0, 0.05).round(2):
        assert choose_bands(float(threshold), num_perm) == tuple(_optimal_param(float(threshold), num_perm, 0.5, 0.5)), threshold


def test_presets_bands_are_the_recipes():
    assert (PRESETS["zyda2"].bands, PRESETS["zyda2"].rows) == (8, 16) == choose_bands(0.85, 128)
    assert (PRESETS["zyda1"].bands, PRESETS["zyda1"].rows) == (32, 4) == choose_bands(0.4, 128)
    assert (PRESETS["fineweb"].bands, PRESETS["fineweb"].rows, PRESETS["fineweb"].num_perm) == (14, 8, 112)
    assert [rpv2_bands(t) for t in (0.7, 0.8, 0.9)] == [(14, 9), (9, 13), (5, 25)]
    assert [choose_bands(t, 128) for t in (0.7, 0.8, 0.9)] == [(14, 9), (9, 13), (5, 25)]
    z = PRESETS["zyda2"]
    assert (z.shingling.unit, z.shingling.n, z.shingling.normalize, z.num_perm, z.seed) == ("char", 25, (), 128, 10)
    assert PRESETS["rpv2"].seed == 42 and PRESETS["zyda1"].shingling.n == 13 and PRESETS["fineweb"].shingling.n == 5
    with pytest.raises(ValueError, match="unknown MinHash preset"):
        get_preset("nope")
    with pytest.raises(ValueError, match="exceeds num_perm"):
        get_preset("zyda2", bands=9)


def test_s_curve_values_and_table():
    curve = s_curve(8, 16)
    assert [s for s, _ in curve] == [0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0]
    for s, p in curve:
        assert p == pytest.approx(1 - (1 - s ** 16) ** 8, abs=1e-12)
    probs = [p for _, p in curve]
    assert probs == sorted(probs) and probs[-1] == 1.0
    assert probs[0] < 0.001 and 0.45 < dict(curve)[0.85] < 0.6 and dict(curve)[0.95] > 0.99
    assert s_curve(32, 4, points=(0.4,))[0][1] == pytest.approx(1 - (1 - 0.4 ** 4) ** 32)
    table = format_s_curve(8, 16, num_perm=128)
    assert "8 bands x 16 rows" in table and "0.85" in table and len(table.splitlines()) == 2 + 8


# -------------------------------------------------------------------------------------------------
# Unicode, empty and short texts, Arrow in and out
# -------------------------------------------------------------------------------------------------

def test_unicode_texts():
    spec = get_preset("zyda2")
    zh = "我们在网络上收集了大量的中文文本，用于训练语言模型并去除重复的数据。" * 3
    emoji = "🚀👍🏽🇫🇷 family 👨‍👩‍👧 party 🎉 " * 5
    sigs = compute_signatures([zh, emoji, zh + "。", None], spec)
    assert sigs.n_shingles[0] == len(zh) - 24 and sigs.n_shingles[1] == len(emoji) - 24
    j = (sigs.values[0] == sigs.values[2]).mean()
    assert j > 0.8
    for i, text in enumerate([zh, emoji]):
        assert np.array_equal(sigs.values[i], ds_values(reference_minhash(text, spec)))
    # word presets: Chinese has no spaces, so a sentence is one word
    fw = compute_signatures([zh, emoji], get_preset("fineweb"))
    assert (fw.n_shingles > 0).all()


def test_empty_and_short_texts():
    spec = get_preset("zyda2")
    texts = ["", None, "short text", "another short one", "short text", "x" * 24, "x" * 25]
    sigs = compute_signatures(pa.array(texts), spec)
    assert sigs.n_shingles.tolist() == [0, 0, 1, 1, 1, 1, 1]
    assert sigs.valid.tolist() == [False, False, True, True, True, True, True]
    assert (sigs.values[0] == MAX32).all() and (sigs.values[1] == MAX32).all()
    # short documents are one shingle each: equal only when identical, never all the same signature
    assert np.array_equal(sigs.values[2], sigs.values[4])
    assert not np.array_equal(sigs.values[2], sigs.values[3])
    assert not np.array_equal(sigs.values[5], sigs.values[6])
    # short_docs="skip" flags them instead (RedPajama-V2's behaviour)
    skip = compute_signatures(texts, spec.replace(short_docs="skip"))
    assert skip.n_shingles.tolist() == [0, 0, 0, 0, 0, 0, 1]
    assert (skip.values[2] == MAX32).all()
    # word mode: punctuation- or whitespace-only documents have no words
    words = compute_signatures(["!!! ...", " \n\t", "one two", "One, two!"], get_preset("zyda1"))
    assert words.n_shingles.tolist() == [0, 0, 1, 1]
    assert np.array_equal(words.values[2], words.values[3])
    assert compute_signatures([], spec).values.shape == (0, 128)


def test_arrow_output_and_input_types():
    sigs = compute_signatures(DOCS[:10], get_preset("zyda2"))
    out = sigs.to_arrow()
    assert out.type == pa.list_(pa.uint32(), 128) and len(out) == 10
    assert out[3].as_py() == sigs.values[3].tolist()
    dict_arr = pa.array(DOCS[:10]).dictionary_encode()
    assert np.array_equal(compute_signatures(dict_arr, get_preset("zyda2")).values, sigs.values)
    with pytest.raises(TypeError, match="string array"):
        compute_signatures(pa.array([1, 2, 3]), get_preset("zyda2"))


# -------------------------------------------------------------------------------------------------
# Normalisation: the fast steps equal their definitions
# -------------------------------------------------------------------------------------------------

def _unicode_punct_definition(t: str) -> str:
    return "".join(" " if (unicodedata.category(c).startswith("P") or c in "$+<=>^`|~" or c in DATATROVE_PUNCTUATION)
                   else c for c in t)


DEFINITIONS = {
    "del_ascii_punct": lambda t: t.translate(str.maketrans("", "", string.punctuation)),
    "ascii_punct_to_space": lambda t: t.translate(str.maketrans(string.punctuation, " " * len(string.punctuation))),
    "datatrove_punct_to_space": lambda t: t.translate(str.maketrans(DATATROVE_PUNCTUATION, " " * len(DATATROVE_PUNCTUATION))),
    "unicode_punct_to_space": _unicode_punct_definition,
    "strip_accents": lambda t: "".join(c for c in unicodedata.normalize("NFD", t) if unicodedata.category(c) != "Mn"),
    "collapse_ws": lambda t: __import__("re").sub(r"\s+", " ", t.strip()),
}


def test_fineweb_normalisation_is_datatrove_simplify_text():
    """Skips where datatrove's text module cannot import (it needs the third-party `regex` package)."""
    try:
        from datatrove.utils.text import PUNCTUATION, simplify_text
    except ImportError as err:
        pytest.skip(f"datatrove.utils.text not importable: {err}")
    assert set(PUNCTUATION) == set(DATATROVE_PUNCTUATION)
    norm = get_preset("fineweb").shingling.text_for_kernel
    extra = ["Il était 3,5 fois • plus ¡rápido! l´altra col·labora 『八百科』 ８９ １２", "Ｉ ＬＯＶＥ Ⅻ ß İ"]
    for text in DOCS + extra:
        assert norm(text) == " ".join(simplify_text(text).split()), text[:60]


@pytest.mark.parametrize("step", sorted(DEFINITIONS))
def test_normalisation_steps_equal_definitions(step):
    extra = ["\x00\x1f\x7f\x85\x9f¡¿«»‹›「」、。·・", "\u2028\u2029\x1c\x1d\x1e\x1f\u200b\ufeff", "Ǆ ǅ ǆ ŉ ß İ"]
    for text in DOCS + extra:
        assert STEPS[step](text) == DEFINITIONS[step](text), (step, text[:40])
