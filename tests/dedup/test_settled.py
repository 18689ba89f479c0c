"""Settled components kept across runs (`curate.dedup.settled`): an append gathers and settles only the components a
new document joined, and its outputs equal a fresh run on the union byte for byte, also when every node number
moved (a source added at the highest priority); another threshold reuses nothing."""

import json
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import tree_digest
from curate.dedup import settled

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_dedup_sound import SOURCES, make_corpus  # noqa: E402
from test_exact_cache import PARTS, _near_copies, _pairs, _run  # noqa: E402


def _counts(run: Path, phase: str) -> tuple[int, int]:
    """(docs shards, members in) of one dedup phase of the run's last dedup."""
    found = [json.loads(p.read_text()) for p in (run / "_state/dedup" / phase).glob("*.json")]
    return sum(m.get("shards", 1) for m in found), sum(m.get("in", 0) for m in found)


def _reuse_line(lines: list[str]) -> tuple[int, int]:
    line = next(x for x in lines if "[dedup: settle]" in x)
    reused, _, total = line.split("] ")[1].split(" components")[0].partition(" of ")
    return int(reused.replace(",", "")), int(total.replace(",", ""))


@pytest.fixture(scope="module")
def grown(tmp_path_factory):
    """A run, then the same corpus with a source at the highest priority holding near copies of a few pages."""
    tmp = tmp_path_factory.mktemp("settled")
    corpus = tmp / "corpus"
    texts = make_corpus(corpus)
    _run(tmp, corpus, tmp / "run", SOURCES)
    (corpus / "top").mkdir()
    with open(corpus / "top" / "part0.jsonl", "w") as fh:
        for i, t in _near_copies(texts, 3):
            fh.write(json.dumps({"id": i, "text": t}) + "\n")
    return tmp, corpus


def test_an_append_settles_only_the_components_new_documents_joined_and_equals_a_fresh_run(grown, capfd):
    tmp, corpus = grown
    sources = ["top", *SOURCES]
    lines = _run(tmp, corpus, tmp / "run", sources, capfd=capfd)
    fresh = tmp / "fresh"
    fresh_lines = _run(tmp, corpus, fresh, sources, capfd=capfd)
    assert tree_digest(tmp / "run", PARTS) == tree_digest(fresh, PARTS)
    reused, total = _reuse_line(lines)
    assert 0 < reused < total, lines
    assert _reuse_line(fresh_lines) == (0, total)   # a fresh run has nothing to recall
    gather, settle = _counts(tmp / "run", "gather"), _counts(tmp / "run", "settle")
    fresh_gather, fresh_settle = _counts(fresh, "gather"), _counts(fresh, "settle")
    assert gather[0] < fresh_gather[0], (gather, fresh_gather)          # fewer shards read for signatures
    assert 0 < settle[1] < fresh_settle[1] / 2, (settle, fresh_settle)  # only the touched components' members settled
    # the recalled components' exact checks stay kept for a later append that touches them: the cache holds every pair
    kept = pa.concat_tables(pq.read_table(f) for f in (tmp / "run/_work/dedup/exact").glob("*.parquet"))
    assert len({tuple(r.values())[:4] for r in kept.to_pylist()}) == len(_pairs(fresh, sources)) > 0


def test_another_threshold_recalls_no_component_and_equals_a_fresh_run(grown, capfd):
    tmp, corpus = grown
    sources = ["top", *SOURCES]
    lines = _run(tmp, corpus, tmp / "run", sources, threshold=0.75, capfd=capfd)
    fresh = tmp / "fresh75"
    _run(tmp, corpus, fresh, sources, threshold=0.75)
    assert tree_digest(tmp / "run", PARTS) == tree_digest(fresh, PARTS)
    assert _reuse_line(lines)[0] == 0, lines


def test_a_component_key_survives_renumbering_and_nothing_else():
    node = lambda key, row: (np.uint64(key) << np.uint64(32)) | np.uint64(row)   # noqa: E731
    ids = (np.array([1, 2], np.uint64), np.array([77, 55], np.uint64))          # shard keys -> shard ids
    members = np.array([node(1, 3), node(1, 9), node(2, 4)], np.uint64)         # one component, in settling order
    label = np.full(3, members[0])

    def key(ids, members, ctx=5):
        return settled.component_keys(ids, members, np.full(len(members), members[0]), ctx)[3].tolist()

    k = key(ids, members)
    assert len(k) == 1
    moved = (np.array([7, 9], np.uint64), ids[1])   # the same shards under new shard keys (a source sorted in earlier)
    assert key(moved, np.array([node(7, 3), node(7, 9), node(9, 4)], np.uint64)) == k
    assert key((ids[0], np.array([77, 56], np.uint64)), members) != k    # a shard's text changed
    assert key(ids, members[[1, 0, 2]]) != k                              # another settling order
    assert key(ids, members, ctx=6) != k                                  # other options
    assert key(ids, members[:2]) != k                                     # a member fewer
    start, first, pos, _ = settled.component_keys(ids, np.r_[members, node(2, 8)], np.r_[label, node(2, 8)], 5)
    assert start.tolist() == [0, 3] and first.tolist() == [0, 0, 0, 3] and pos.tolist() == [0, 1, 2, 0]
