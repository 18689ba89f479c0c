"""Sound dedup: no document is removed unless a kept document is a near-duplicate of it.

The corpus is built here: pages crawled again and again that drift a few words per edition (chains, spread
over four sources with priorities), ordinary near-duplicates across sources, and unrelated pages. An
independent scorer (exact character 25-gram Jaccard over Python sets of strings) judges every removal.
"""

import json
import os
import random
import subprocess
import sys

import duckdb
import numpy as np
import pytest

from conftest import kill_9_when, run_cli, tree_digest
from curate.dedup.settle import CHECK, KEPT, REMOVED, Settled, finish, settle_members
from curate.rundir.views import connect

SOURCES = ["fwe", "dclm", "zyda", "dolma_cc"]
THRESHOLD = 0.8


def shingles(text: str, n: int = 25) -> set:
    return {text[i:i + n] for i in range(len(text) - n + 1)} if len(text) >= n else {text}


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b)


def make_corpus(root, chains=14, editions=10, groups=24, unrelated=100, seed=7) -> dict:
    """Write 2 jsonl files per source; return {(source, id): text}."""
    rng = random.Random(seed)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(3000)]

    def page(words=300):
        return [rng.choice(vocab) for _ in range(words)]

    def edit(words, k):
        out = list(words)
        for _ in range(k):
            out[rng.randrange(len(out))] = rng.choice(vocab)
        return out

    docs = []
    for c in range(chains):  # a living page: each crawl 2 words different from the one before
        words = page()
        for e in range(editions):
            source = "fwe" if e == 0 and c % 2 == 0 else rng.choice(SOURCES[1:] if e == 0 else SOURCES)
            docs.append((source, f"chain{c}-ed{e}", " ".join(words)))
            words = edit(words, 2)
    for g in range(groups):  # ordinary near-duplicates: one page copied to other sources with a word or two changed
        words = page()
        for k, source in enumerate(rng.sample(SOURCES, rng.randint(2, 3))):
            docs.append((source, f"dup{g}-{k}", " ".join(edit(words, rng.randint(0, 2) if k else 0))))
    for u in range(unrelated):
        docs.append((rng.choice(SOURCES), f"page{u}", " ".join(page(rng.randint(80, 300)))))
    rng.shuffle(docs)
    for source in SOURCES:
        (root / source).mkdir(parents=True)
        mine = [d for d in docs if d[0] == source]
        for part in range(2):
            with open(root / source / f"part{part}.jsonl", "w") as fh:
                for _, i, text in mine[part::2]:
                    fh.write(json.dumps({"id": i, "text": text}) + "\n")
    return {(s, i): t for s, i, t in docs}


def pipeline(tmp, corpus, name, extra=""):
    f = tmp / f"{name}.yaml"
    srcs = "\n".join(f"  {s}: {{format: jsonl, fields: {{id: id}}, paths: '{corpus}/{s}/*.jsonl'}}" for s in SOURCES)
    f.write_text(f"name: {name}\npriority: {SOURCES}\nsources:\n{srcs}\nstages:\n  ingest: {{}}\n"
                 f"  minhash: {{preset: zyda2, partitions: 2}}\n  dedup: {{policy: cross_source{extra}}}\n")
    return f


def removed_of(run):
    return duckdb.sql(f"SELECT source, id, reason, detail FROM read_parquet('{run}/ledger/dedup/*/*.parquet')").fetchall()


def kept_keys(run):
    return set(duckdb.sql(f"SELECT split_part(filename, '/', -2), id FROM read_parquet('{run}/kept/*/*.parquet', filename=true)").fetchall())


@pytest.fixture(scope="module")
def drift(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("drift")
    texts = make_corpus(tmp / "corpus")
    runs = {}
    for mode in ("sound", "unverified"):
        assert run_cli(pipeline(tmp, tmp / "corpus", mode, f", mode: {mode}"), "--output", tmp / mode, "--inline", "-q") == 0
        runs[mode] = tmp / mode
    sets = {k: shingles(t) for k, t in texts.items()}
    return tmp, texts, sets, runs


def unsupported(run, sets):
    """Removed documents that have no kept document at Jaccard >= THRESHOLD (checked against every kept document)."""
    kept = [sets[k] for k in kept_keys(run)]
    return [(s, i) for s, i, _, _ in removed_of(run) if not any(jaccard(sets[(s, i)], k) >= THRESHOLD for k in kept)]


def recall(run, sets):
    """Share of clear duplicates (Jaccard >= 0.85 with a document of a higher-priority source) that were removed."""
    family = {}  # pages of different families share nothing (random words): compare within families only
    for k in sets:
        family.setdefault(k[1].split("-")[0], []).append(k)
    clear = {a for keys in family.values() for a in keys for b in keys
             if SOURCES.index(b[0]) < SOURCES.index(a[0]) and jaccard(sets[a], sets[b]) >= 0.85}
    gone = {(s, i) for s, i, _, _ in removed_of(run)}
    return len(clear & gone) / len(clear), len(clear)


def test_every_removal_names_a_kept_document_at_or_above_the_threshold(drift):
    _, texts, sets, runs = drift
    run = runs["sound"]
    kept = kept_keys(run)
    evidence = {(s, i): (rid, rs, sim, m) for s, i, rid, rs, sim, m in duckdb.sql(
        f"SELECT source, id, rep_id, rep_source, similarity, method FROM read_parquet('{run}/dedup/clusters/*/*.parquet')").fetchall()}
    rows = removed_of(run)
    assert len(rows) >= 30
    methods = set()
    for source, i, reason, detail in rows:
        rep_id, rep_source, sim, method = evidence[(source, i)]
        assert (rep_source, rep_id) in kept, "the named document is kept"
        assert reason == f"minhash_duplicate_of:{rep_source}" and detail.startswith(f"kept {rep_id} ({rep_source}); cluster ")
        assert f"similarity {sim:.3f} ({method})" in detail
        true = jaccard(sets[(source, i)], sets[(rep_source, rep_id)])
        assert true >= THRESHOLD, f"{source}/{i} removed for {rep_source}/{rep_id} at exact Jaccard {true:.3f}"
        if method == "exact jaccard":
            assert abs(sim - true) < 1e-4
        methods.add(method)
    assert methods == {"minhash estimate", "exact jaccard"}, "both the estimate and the exact check decided some"
    assert unsupported(run, sets) == []


def test_the_unverified_mode_removes_documents_unlike_anything_kept(drift):
    _, _, sets, runs = drift
    bad = unsupported(runs["unverified"], sets)
    assert len(bad) >= 5, "the corpus must show the chain problem, or the sound test proves nothing"
    assert all(i.startswith("chain") for _, i in bad)


def test_recall_on_clear_duplicates_is_no_lower_than_unverified(drift):
    _, _, sets, runs = drift
    sound, n = recall(runs["sound"], sets)
    unverified, _ = recall(runs["unverified"], sets)
    assert n >= 30
    assert sound >= unverified, (sound, unverified)
    assert sound >= 0.9


def test_accounting_identity_and_cluster_sizes(drift):
    _, texts, _, runs = drift
    for run in runs.values():
        kept = kept_keys(run)
        gone = {(s, i) for s, i, _, _ in removed_of(run)}
        assert not kept & gone and len(kept) + len(gone) == len(texts)
    run = runs["sound"]
    rows = duckdb.sql(f"SELECT source, id, kept, rep_id, rep_source, represents, length FROM "
                      f"read_parquet('{run}/dedup/clusters/*/*.parquet')").fetchall()
    favour = {}
    for s, i, k, rid, rs, rep, n in rows:
        assert n == len(texts[(s, i)])
        if not k:
            favour[(rs, rid)] = favour.get((rs, rid), 0) + 1
            assert rep == 0
    for s, i, k, _, _, rep, _ in rows:
        if k:
            assert rep == 1 + favour.get((s, i), 0)


def test_the_zyda2_recipe_is_sound_by_default_and_unverified_one_set_away():
    from curate import load_pipeline

    p = load_pipeline("pipelines/zyda2.yaml", [])
    dedup = next(s for s in p.stages if s.name == "dedup")
    assert dedup.options["mode"] == "sound" and dedup.options["threshold"] == 0.8
    assert next(s for s in load_pipeline("pipelines/zyda2.yaml", ["stages.dedup.mode=unverified"]).stages
                if s.name == "dedup").options["mode"] == "unverified"


@pytest.mark.slow  # embedded Ray clusters of one and two workers
def test_ray_with_one_and_two_workers_is_byte_identical_to_inline(drift):
    tmp, _, _, runs = drift
    parts = ("kept", "ledger", "dedup")
    reference = tree_digest(runs["sound"], parts)
    for workers in (1, 2):
        out = tmp / f"w{workers}"
        assert run_cli(pipeline(tmp, tmp / "corpus", "sound"), "--output", out, "--workers", str(workers), "-q") == 0
        assert tree_digest(out, parts) == reference


@pytest.mark.slow  # kill -9
def test_killed_during_dedup_resumes_to_identical_outputs(drift):
    tmp, _, _, runs = drift
    run = tmp / "killed"
    cmd = [sys.executable, "-m", "curate", "run", str(pipeline(tmp, tmp / "corpus", "sound")), "--output", str(run), "--inline", "-q"]
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    kill_9_when(cmd, lambda: list((run / "_state" / "dedup").glob("settle/*.json")), 120, env=env)
    assert not (run / "summary.json").exists(), "the run finished before the kill"
    assert subprocess.run(cmd, env=env).returncode == 0
    parts = ("kept", "ledger", "dedup")
    assert tree_digest(run, parts) == tree_digest(runs["sound"], parts)


def test_settle_members_compares_with_kept_documents_only_and_re_clusters_the_rest():
    """A chain a-b-c-d in one component: a (fwe) is kept; b close to a goes; c, far from a, is not removed for
    a; in round 2 c (dclm) is the representative and keeps; d (zyda) close to c goes in c's favour."""
    rng = np.random.default_rng(0)
    base = rng.integers(0, 2**32, 128, dtype=np.uint32)

    def mutate(sig, k):
        out = sig.copy()
        out[rng.choice(128, k, replace=False)] = rng.integers(0, 2**32, k, dtype=np.uint32)
        return out

    a = base
    b = mutate(a, 6)        # ~0.95 with a
    c = mutate(a, 60)       # ~0.5 with a
    d = mutate(c, 6)        # ~0.95 with c, ~0.5 with a
    e = mutate(c, 19)       # ~0.85 with c: the exact check decides
    sig = np.stack([a, b, c, d, e])
    st = settle_members(np.zeros(5, np.int64), np.array([0, 1, 1, 2, 3]), sig, "cross_source", 0.8, 0.1, 8)
    assert list(st.fate) == [KEPT, REMOVED, KEPT, REMOVED, CHECK]
    assert list(st.rep[:4]) == [0, 0, 2, 2] and st.solid[4] == 2
    assert st.sim[3] >= 0.9 and st.sim[2] == 1.0, "c represents its own sub-cluster"
    one = settle_members(np.zeros(5, np.int64), np.array([0, 1, 1, 2, 3]), sig, "cross_source", 0.8, 0.1, 1)
    assert list(one.fate[[2, 3, 4]]) == [KEPT, KEPT, KEPT], "past the last round the rest is kept, never removed"


def test_fixed_members_are_never_removed_even_under_policy_all():
    """Frozen documents (sorted first, `fixed`) are all kept, though identical; a new copy of them goes."""
    sig = np.tile(np.arange(64, dtype=np.uint32), (3, 1))
    plain = settle_members(np.zeros(3, np.int64), np.array([0, 0, 0]), sig, "all", 0.8, 0.1, 8)
    assert list(plain.fate) == [KEPT, REMOVED, REMOVED]
    st = settle_members(np.zeros(3, np.int64), np.array([0, 0, 0]), sig, "all", 0.8, 0.1, 8, fixed=np.array([True, True, False]))
    assert list(st.fate) == [KEPT, KEPT, REMOVED] and st.rep[2] in (0, 1)


def _settled(fate, solid, wait, wait_sure):
    n = len(fate)
    return Settled(np.arange(n), np.ones(n, np.float32), np.array(fate, np.int8), np.array(solid), np.zeros(n, np.float32),
                   np.array(wait), np.zeros(n, np.float32), np.array(wait_sure))


def test_a_waiting_member_that_another_removal_relies_on_stays():
    """1 waits for its check against 0 (and passes); 2 (sure) and 3 (passes its check) match only 1: they go,
    so 1 stays. Where 2 also passes against 0 and 3 is absent, 1 goes too."""
    s = _settled([KEPT, CHECK, CHECK, CHECK], [-1, 0, -1, -1], [-1, -1, 1, 1], [False, False, True, False])
    gone, rep = finish(s, np.array([False, True, False, False]), np.array([False, False, False, True]))
    assert list(gone) == [False, False, True, True] and list(rep[2:]) == [1, 1]
    s = _settled([KEPT, CHECK, CHECK], [-1, 0, 0], [-1, -1, 1], [False, False, True])
    gone, rep = finish(s, np.array([False, True, True]), np.array([False, False, False]))
    assert list(gone) == [False, True, True] and list(rep) == [0, 0, 0]


def _wipeout(tmp):
    """`main` has 20 pages; `mirror` copies 15 of them (a word changed) and has 3 of its own; one page is in
    `main` twice more with a word changed (a cluster of 4 with its mirror copy)."""
    rng = random.Random(3)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(2000)]
    pages = [[rng.choice(vocab) for _ in range(200)] for _ in range(23)]
    main = [(f"m{k}", p) for k, p in enumerate(pages[:20])] + [(f"m{k}b", pages[0][:-1] + [f"x{k}"]) for k in range(2)]
    mirror = [(f"r{k}", p[:-1] + ["zz"]) for k, p in enumerate(pages[:15])] + [(f"own{k}", p) for k, p in enumerate(pages[20:])]
    for name, docs in (("main", main), ("mirror", mirror)):
        (tmp / name).mkdir()
        with open(tmp / name / "a.jsonl", "w") as fh:
            for i, words in docs:
                fh.write(json.dumps({"id": i, "text": " ".join(words)}) + "\n")
    f = tmp / "wipe.yaml"
    f.write_text(f"name: wipe\npriority: [main, mirror]\nsources:\n"
                 f"  main: {{format: jsonl, fields: {{id: id}}, paths: '{tmp}/main/*.jsonl'}}\n"
                 f"  mirror: {{format: jsonl, fields: {{id: id}}, paths: '{tmp}/mirror/*.jsonl'}}\n"
                 f"stages:\n  ingest: {{}}\n  minhash: {{preset: zyda2}}\n  dedup: {{policy: cross_source, max_cluster: 3}}\n")
    return f


def test_a_source_wiped_out_by_dedup_raises_the_alarm(tmp_path, capsys):
    f = _wipeout(tmp_path)
    assert run_cli(f, "--output", tmp_path / "run", "--inline") == 0
    out = capsys.readouterr()
    assert "WARNING: dedup: mirror lost 83.3% of its documents (15 of 18) to dedup, more than max_removed_share 0.5" in out.out
    assert "WARNING: dedup: main has documents in a cluster of 4, more than max_cluster 3" in out.out
    rows = {(r["stage"], r["source"]): r for r in json.loads((tmp_path / "run" / "summary.json").read_text())}
    assert rows[("dedup", "mirror")]["dedup"] == {"removed_share": 0.833333, "largest_clusters": [4, 2, 2],
                                                  "alarm": ["removed_share", "cluster_size"]}
    assert rows[("dedup", "main")]["dedup"]["alarm"] == ["cluster_size"] and rows[("dedup", "main")]["removed"] == {}
    html = (tmp_path / "run" / "report.html").read_text()
    assert "ALARM: dedup: mirror lost 83.3%" in html
    assert run_cli(f, "--output", tmp_path / "strict", "--inline", "-q", "--set", "stages.dedup.on_alarm=error",
                   "--set", "stages.dedup.max_cluster=100") != 0
    assert ("curate: error: dedup: mirror lost 83.3% of its documents (15 of 18) to dedup, more than max_removed_share 0.5"
            in capsys.readouterr().err)


def test_mix_rehydrates_by_cluster_size_and_shows_it_in_the_plan(drift):
    from curate.tokens.mixture import render_plan

    tmp, texts, _, runs = drift
    f = pipeline(tmp, tmp / "corpus", "rehydrate")
    f.write_text(f.read_text() + "  mix: {rehydrate: {1: 1, 2: 2, 5: 3, 100: 1}}\n  tokenize: {tokenizer: gpt2}\n"
                                 "  pack: {seq_len: 257}\n")
    run = tmp / "rehydrated"
    assert run_cli(f, "--output", run, "--inline", "-q") == 0
    plan = json.loads((run / "_state" / "mix" / "record.json").read_text())["plan"]
    r = plan["rehydrate"]
    assert r["dedup"] == "dedup" and r["weights"] == {"1": 1.0, "2": 2.0, "5": 3.0, "100": 1.0}
    size = {(s, i): n for s, i, n in duckdb.sql(
        f"SELECT source, id, represents FROM read_parquet('{run}/dedup/clusters/*/*.parquet') WHERE kept").fetchall()}
    got = {(s, i): n for s, i, n in connect(str(run)).sql("SELECT source, id, copies FROM tokens").fetchall()}   # as packed
    live = set(texts) - {(s, i) for s, i, _, _ in removed_of(run)}   # what the dedup step kept
    for source in SOURCES:  # the source keeps its characters: sum(chars x weight) / factor == chars
        mine = [k for k in live if k[0] == source]
        w = {k: (3.0 if size.get(k, 1) >= 5 else 2.0 if size.get(k, 1) >= 2 else 1.0) for k in mine}
        chars = sum(len(texts[k]) for k in mine)
        assert abs(sum(len(texts[k]) * w[k] for k in mine) / r["factor"][source] - chars) < 1e-6 * chars
        for k in mine:  # each document's copies: floor or ceil of weight / factor
            e = w[k] / r["factor"][source]
            assert got.get(k, 0) in (int(np.floor(e)), int(np.ceil(e)))
    assert any(n >= 2 for n in size.values()) and max(got.values()) >= 2
    shown = render_plan(plan)  # what the mix step printed before running
    assert "rehydration by dedup cluster size (dedup): size >= 1: x1, size >= 2: x2, size >= 5: x3, size >= 100: x1" in shown
    assert f"  fwe        factor {r['factor']['fwe']:.4f}  documents by weight x1: " in shown
    ledger = duckdb.sql(f"SELECT count(*) FROM read_parquet('{run}/ledger/*/*/*.parquet')").fetchall()[0][0]
    assert len(got) + ledger == len(texts), "accounting identity"


def test_curate_query_lists_a_clusters_members_with_their_evidence(drift):
    from curate.query import query

    _, texts, _, runs = drift
    run = runs["sound"]
    [(cluster,)] = duckdb.sql(f"SELECT cluster FROM read_parquet('{run}/dedup/clusters/*/*.parquet') WHERE id = 'chain0-ed5'").fetchall()
    out = query(str(run), f"SELECT source, id, kept_by_dedup, rep_source, rep_id, similarity, method, length, represents FROM clusters "
                          f"WHERE cluster = {cluster} ORDER BY id", fmt="csv")
    rows = [line.split(",") for line in out.strip().splitlines()]
    assert rows[0] == ["source", "id", "kept_by_dedup", "rep_source", "rep_id", "similarity", "method", "length", "represents"]
    assert sorted(r[1] for r in rows[1:]) == sorted(i for _, i in texts if i.startswith("chain0-"))
    assert all(int(r[7]) == len(texts[(r[0], r[1])]) for r in rows[1:])


def test_rehydrate_needs_cluster_sizes_as_keys(tmp_path, capsys):
    f = pipeline(tmp_path, tmp_path, "bad", "")
    f.write_text(f.read_text() + "  mix: {rehydrate: {one: 1}}\n")
    assert run_cli(f, "--output", tmp_path / "run", "--inline") == 2
    assert "stages.mix.rehydrate.one: not a cluster size" in capsys.readouterr().err
