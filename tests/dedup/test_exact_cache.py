"""Exact checks kept across runs (`curate.dedup.exact_cache`): an append exact-checks only the pairs with a new member,
and its outputs equal a fresh run on the union byte for byte, also when every node number moved (a source added at
the highest priority), when the threshold changed, and when a docs shard's text changed in place."""

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import run_cli, tree_digest
from curate.dedup import exact_cache, nodes
from curate.dedup.layout import WORK, read_frame

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_dedup_sound import SOURCES, make_corpus  # noqa: E402

PARTS = ("kept", "ledger", "dedup")


def _pipeline(tmp: Path, corpus: Path, sources: list[str], threshold: float = 0.8) -> Path:
    f = tmp / "p.yaml"
    srcs = "\n".join(f"  {s}: {{format: jsonl, fields: {{id: id}}, paths: '{corpus}/{s}/*.jsonl'}}" for s in sources)
    f.write_text(f"name: p\npriority: {sources}\nsources:\n{srcs}\nstages:\n  ingest: {{}}\n"
                 f"  minhash: {{preset: zyda2, partitions: 2}}\n  dedup: {{policy: cross_source, threshold: {threshold}}}\n")
    return f


def _run(tmp: Path, corpus: Path, out: Path, sources: list[str], threshold: float = 0.8, capfd=None) -> list[str]:
    if capfd is not None:
        capfd.readouterr()
    assert run_cli(_pipeline(tmp, corpus, sources, threshold), "--output", out, "--inline", *([] if capfd else ["-q"])) == 0
    said = capfd.readouterr() if capfd is not None else None
    return [] if said is None else (said.out + said.err).splitlines()


def _pairs(run: Path, sources: list[str]) -> set[frozenset]:
    """The pairs this run's exact-b tasks checked, each side as (source, shard index, row): node numbers move when a
    source is added above the others, these do not (a source's shards are the same)."""
    out = set()
    for f in sorted((run / "_work/dedup/graph/sound/checks").glob(f"*{WORK}")):
        t = read_frame(str(f))
        sides = [np.array(t.column(c).to_pylist(), np.uint64) for c in ("node", "rep")]
        a, b = ([(sources[p], s, r) for p, s, r in zip(nodes.priority_of(n), nodes.shard_of(n), nodes.row_of(n))] for n in sides)
        out |= {frozenset(pair) for pair in zip(a, b)}
    return out


def _checked(run: Path) -> int:
    return sum(json.loads(p.read_text()).get("in", 0) for p in (run / "_state/dedup/exact-b").glob("*.json"))


def _near_copies(texts: dict, n: int) -> list[tuple[str, str]]:
    """Copies of the first n chain pages with a word changed: pairs near the threshold, checked exactly."""
    chains = sorted(k for k in texts if k[1].startswith("chain") and k[1].endswith("-ed0"))[:n]
    out = []
    for s, i in chains:
        words = texts[(s, i)].split()
        words[len(words) // 2] = "appended"
        out.append((f"top-{i}", " ".join(words)))
    return out


@pytest.fixture(scope="module")
def appended(tmp_path_factory):
    """A run, then an append of a source at the highest priority (every node number moves) holding near copies."""
    tmp = tmp_path_factory.mktemp("exactcache")
    corpus = tmp / "corpus"
    texts = make_corpus(corpus)
    run = tmp / "run"
    _run(tmp, corpus, run, SOURCES)
    first = _pairs(run, SOURCES)
    (corpus / "top").mkdir()
    with open(corpus / "top" / "part0.jsonl", "w") as fh:
        for i, t in _near_copies(texts, 6):
            fh.write(json.dumps({"id": i, "text": t}) + "\n")
    return tmp, corpus, run, first


def test_an_append_exact_checks_only_pairs_with_a_new_member_and_equals_a_fresh_run(appended, capfd):
    tmp, corpus, run, first = appended
    sources = ["top", *SOURCES]
    lines = _run(tmp, corpus, run, sources, capfd=capfd)
    fresh = tmp / "fresh"
    _run(tmp, corpus, fresh, sources)
    assert tree_digest(run, PARTS) == tree_digest(fresh, PARTS)
    every = _pairs(fresh, sources)   # every pair the union needs checked (a fresh run checks them all)
    new = every - first
    assert first and new and len(new) < len(every), (len(first), len(new), len(every))
    assert any(s == "top" for pair in new for s, _, _ in pair), "no pair of the appended source was checked"
    assert _pairs(run, sources) == new, "the append checked a pair an earlier run had checked"
    assert _checked(run) == len(new)
    # the pairs of components settled before are not asked at all (`curate.dedup.settled`): the rest are found here
    assert any("[dedup: exact]" in line and line.endswith(f"pairs reused, {len(new):,} checked") for line in lines), lines


def test_a_changed_threshold_reuses_only_what_holds_and_equals_a_fresh_run(appended):
    """The kept results are Jaccards, not decisions: another threshold asks other pairs, and decides them anew."""
    tmp, corpus, run, _ = appended
    sources = ["top", *SOURCES]
    _run(tmp, corpus, run, sources, threshold=0.75)
    fresh = tmp / "fresh75"
    _run(tmp, corpus, fresh, sources, threshold=0.75)
    assert tree_digest(run, PARTS) == tree_digest(fresh, PARTS)
    assert 0 < _checked(run) < len(_pairs(fresh, sources)), "all or none of the pairs were checked again"


def test_a_docs_shard_changed_in_place_is_checked_again(appended):
    """Same file names, same ids, other text: the shard's id changes, no kept result of it passes for the new text."""
    tmp, corpus, run, _ = appended
    sources = ["top", *SOURCES]
    path = corpus / "top" / "part0.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps({"id": r["id"], "text": r["text"].replace("appended", "changed", 1)}) + "\n" for r in rows))
    _run(tmp, corpus, run, sources)
    fresh = tmp / "fresh-changed"
    shutil.rmtree(fresh, ignore_errors=True)
    _run(tmp, corpus, fresh, sources)
    assert tree_digest(run, PARTS) == tree_digest(fresh, PARTS)
    top = {pair for pair in _pairs(fresh, sources) if any(s == "top" for s, _, _ in pair)}
    assert top and top <= _pairs(run, sources), "a pair of the changed shard was not checked again"


def test_lookup_finds_a_pair_in_either_order_and_never_across_shard_ids(tmp_path):
    ids = (np.array([1, 2], np.uint64), np.array([77, 55], np.uint64))   # shard keys 1, 2 -> shard ids 77, 55
    node = lambda key, row: (np.uint64(key) << np.uint64(32)) | np.uint64(row)   # noqa: E731
    member, rep = np.array([node(1, 3), node(2, 4)], np.uint64), np.array([node(2, 9), node(1, 3)], np.uint64)
    exact_cache.store(str(tmp_path), 0, ids, member, rep, np.array([0.5, 0.25]))
    swapped = exact_cache.lookup(str(tmp_path), ids, rep, member)
    assert swapped.tolist() == [0.5, 0.25]
    moved = (ids[0], np.array([77, 56], np.uint64))   # shard 2's text changed: a new id
    assert np.isnan(exact_cache.lookup(str(tmp_path), moved, member, rep)).all()
    renumbered = (np.array([5, 6], np.uint64), ids[1])   # the same shards under new shard keys (node numbers moved)
    member2, rep2 = np.array([node(5, 3), node(6, 4)], np.uint64), np.array([node(6, 9), node(5, 3)], np.uint64)
    assert exact_cache.lookup(str(tmp_path), renumbered, member2, rep2).tolist() == [0.5, 0.25]
