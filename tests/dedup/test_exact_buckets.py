"""Sound dedup's exact check in buckets of pairs (`sound.queue_checks`, `exact_a`, `exact_b`): each group of docs
shards sends its texts in one bundle, a batch for each bucket that needs its documents, and however the pairs are cut
into buckets the Jaccards are the exact ones."""

import glob

import numpy as np
import pyarrow as pa

from curate.dedup import bundles, nodes, sound
from curate.dedup.exact import jaccard, shingle_hashes
from curate.dedup.graph import GraphDir
from curate.dedup.layout import GROUP, WORK, group_of, read_columns, shard_tag, tag_key, tag_of
from curate.stages.graph_jobs import ShardJob, grouped
from curate.stages.phase import Task

SOUND = sound.Sound(0.8, 0.1, 8, "", {"unit": "char", "n": 5, "normalize": [], "short_docs": "whole"})
SHARDS = 12   # shards 0-7 and 8-11 of priority 0: two groups (`layout.GROUP`)


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
    tags = [tag_of(int(nodes.shard_key(nodes.pack(0, shard, np.zeros(1, np.int64)))[0])) for shard in range(len(texts))]
    queued = bundles.receivers(g.path("sound", "exact"))
    for group in sorted({group_of(tag_key(t)) for t in queued}):   # a task a group, as `graph_jobs.grouped` plans them
        sound.exact_a(g, group, [(t, text) for t, text in zip(tags, texts) if t in queued and group_of(tag_key(t)) == group])
    buckets = sorted(p.rsplit("/", 1)[1][:-len(WORK)] for p in glob.glob(g.path("sound", "checks", f"*{WORK}")))
    checked = sum(sound.exact_b(g, SOUND, b)["in"] for b in buckets)
    done = read_columns(g.path("sound", "exact-done", "p=00001", f"*{WORK}"), ["node", "rep", "jaccard"],
                        {"node": np.uint64, "rep": np.uint64, "jaccard": np.float64})
    return g, buckets, checked, done


def test_bucketed_exact_checks_give_the_exact_jaccards_and_a_batch_per_shard_and_bucket(tmp_path):
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
        senders = glob.glob(g.path("sound", "texts", f"*{WORK}"))   # one bundle a group of shards with documents queued
        assert len(senders) == len({group_of(k) for k in nodes.shard_key(np.r_[member, rep])}) == 2
        for b in buckets:   # a bucket is sent only its own pairs' documents, each once, by each shard that holds some
            sent = bundles.receive(g.path("sound", "texts"), b, ["node"], {"node": np.uint64})["node"]
            mine = read_columns(g.path("sound", "checks", f"{b}{WORK}"), ["node", "rep"], {"node": np.uint64, "rep": np.uint64})
            assert sorted(sent.tolist()) == sorted(set(mine["node"].tolist()) | set(mine["rep"].tolist()))


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


def test_a_small_graph_s_pairs_are_spread_over_buckets_of_at_least_the_spread_size(tmp_path, monkeypatch):
    """A small graph is one partition: its pairs are still cut into `SPREAD` buckets (exact-b tasks for every core),
    none under `SPREAD_HASHES` shingles and none over the budget; with more partitions, fewer buckets each."""
    monkeypatch.setattr(sound, "SPREAD_HASHES", 1000)
    member, rep = pairs(np.random.default_rng(4), count=400)
    for partitions, size, budget, want in ((1, 100, 1 << 24, sound.SPREAD),   # 40,000: 8 of 5,000
                                           (2, 100, 1 << 24, sound.SPREAD // 2),   # 4 a partition, 8 in all
                                           (1, 10, 1 << 24, 4),               # 4,000: no bucket under 1,000
                                           (1, 100, 2000, 20)):               # the budget still bounds a bucket
        g = GraphDir(str(tmp_path / f"{partitions}-{size}-{budget}"), partitions)
        sound.queue_checks(g, 0, member, rep, np.full(len(member), size), budget)
        cuts = [read_columns(p, ["node"], {"node": np.uint64})["node"] for p in sorted(glob.glob(g.path("sound", "checks", f"*{WORK}")))]
        assert len(cuts) == want and sum(map(len, cuts)) == len(member)


def test_grouped_tasks_take_consecutive_shards_of_one_source_and_name_the_group_a_reader_finds():
    """`graph_jobs.grouped`: a task per `GROUP` consecutive shards of a source, in plan order, named as `group_of`
    names the group of each of its shards (exact-b finds a text's bundle from its node alone)."""
    jobs = [ShardJob(source, f"s{i}", shard_tag(priority, i)) for priority, source, count in ((0, "a", 2 * GROUP + 3), (1, "b", 2))
            for i in range(count)]
    tasks = grouped([Task(j.tag, j.shard, j) for j in jobs if j.tag != shard_tag(0, 1)])   # a shard with nothing queued plans nothing
    assert [len(t.payload) for t in tasks] == [GROUP - 1, GROUP, 3, 2]
    assert [j for t in tasks for j in t.payload] == [j for j in jobs if j.tag != shard_tag(0, 1)]
    for t in tasks:
        assert {group_of(tag_key(j.tag)) for j in t.payload} == {t.key} and len({j.source for j in t.payload}) == 1
