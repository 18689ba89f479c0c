"""Sound dedup's exact check in buckets of pairs (`sound.queue_checks`, `exact_a`, `exact_b`): each docs shard writes
one file per bucket that needs its documents, not one per shard its pairs lead to, and however the pairs are cut
into buckets the Jaccards are the exact ones."""

import glob

import numpy as np
import pyarrow as pa

from curate.dedup import bundles, nodes, sound
from curate.dedup.exact import jaccard, shingle_hashes
from curate.dedup.graph import GraphDir
from curate.dedup.layout import WORK, read_columns, tag_of

SOUND = sound.Sound(0.8, 0.1, 8, "", {"unit": "char", "n": 5, "normalize": [], "short_docs": "whole"})
SHARDS = 4


def corpus(seed=3, rows=30):
    """Per shard (priority 0, shards 0..3): `rows` texts, a few sharing words with documents of other shards."""
    rng = np.random.default_rng(seed)
    words = [f"w{k}" for k in range(40)]
    return [pa.array([" ".join(rng.choice(words, int(rng.integers(0, 40)))) for _ in range(rows)]) for _ in range(SHARDS)]


def pairs(rng, count=60, rows=30):
    member, rep = (np.concatenate([nodes.pack(0, int(s), np.array([r])) for s, r in
                                   zip(rng.integers(0, SHARDS, count), rng.integers(0, rows, count))]) for _ in range(2))
    return member, rep


def check(tmp, texts, member, rep, size, bucket_hashes):
    g = GraphDir(str(tmp), 2)
    sound.queue_checks(g, 1, member, rep, size, bucket_hashes)
    for shard, text in enumerate(texts):
        tag = tag_of(int(nodes.shard_key(nodes.pack(0, shard, np.zeros(1, np.int64)))[0]))
        if tag in bundles.receivers(g.path("sound", "exact")):
            sound.exact_a(g, SOUND, tag, text)
    buckets = sorted(p.rsplit("/", 1)[1][:-len(WORK)] for p in glob.glob(g.path("sound", "checks", f"*{WORK}")))
    checked = sum(sound.exact_b(g, SOUND, b)["in"] for b in buckets)
    done = read_columns(g.path("sound", "exact-done", "p=00001", f"*{WORK}"), ["node", "rep", "jaccard"],
                        {"node": np.uint64, "rep": np.uint64, "jaccard": np.float64})
    return g, buckets, checked, done


def test_bucketed_exact_checks_give_the_exact_jaccards_and_a_file_per_shard_and_bucket(tmp_path):
    texts = corpus()
    member, rep = pairs(np.random.default_rng(5))
    size = np.full(len(member), 50)
    shingling = sound.shingling_of(SOUND)
    sets = {int(n): shingle_hashes(texts[nodes.shard_of(np.array([n]))[0]][int(nodes.row_of(np.array([n]))[0])].as_py(), shingling)
            for n in np.r_[member, rep]}
    for bucket_hashes, want_buckets in ((1 << 24, 1), (500, 6)):  # 60 pairs of size 50: 10 a bucket
        g, buckets, checked, done = check(tmp_path / str(bucket_hashes), texts, member, rep, size, bucket_hashes)
        assert len(buckets) == want_buckets and checked == len(member)
        got = {(int(a), int(b)): j for a, b, j in zip(done["node"], done["rep"], done["jaccard"])}
        assert got == {(int(a), int(b)): jaccard(sets[int(a)], sets[int(b)]) for a, b in zip(member, rep)}
        for b in buckets:   # one text file per (shard, bucket), and a bucket holds only its own pairs' documents
            sent = read_columns(g.path("sound", "texts", b, f"*{WORK}"), ["node"], {"node": np.uint64})["node"]
            mine = read_columns(g.path("sound", "checks", f"{b}{WORK}"), ["node", "rep"], {"node": np.uint64, "rep": np.uint64})
            assert sorted(sent.tolist()) == sorted(set(mine["node"].tolist()) | set(mine["rep"].tolist()))
            assert len(glob.glob(g.path("sound", "texts", b, f"*{WORK}"))) == len(np.unique(nodes.shard_key(sent)))


def test_a_bucket_holds_about_its_budget_of_shingles(tmp_path):
    """The cut bounds an exact-b task's memory: a bucket's pairs sum to under the budget plus one pair."""
    member, rep = pairs(np.random.default_rng(9), count=200)
    size = np.random.default_rng(1).integers(1, 400, len(member))
    g = GraphDir(str(tmp_path), 2)
    sound.queue_checks(g, 0, member, rep, size, 1000)
    seen = 0
    for path in sorted(glob.glob(g.path("sound", "checks", f"*{WORK}"))):
        cut = read_columns(path, ["node"], {"node": np.uint64})["node"]
        total = size[seen:seen + len(cut)].sum()
        assert total <= 1000 + size[seen:seen + len(cut)].max()
        seen += len(cut)
    assert seen == len(member)
