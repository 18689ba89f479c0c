"""Append-only runs: new input files join a finished run, only their work is done, and the run directory equals a
fresh run over the union byte for byte (bench/compare_runs.py), after each of three appends: a file added to a
source, a new source of the lowest priority, a new source of the highest priority whose documents copy kept ones.
"""

from __future__ import annotations

import gzip
import os
import json
import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.io import fs

from conftest import kill_9_when, run_cli

sys.path[:0] = [str(Path(__file__).resolve().parents[2] / "bench"), str(Path(__file__).resolve().parent)]
from compare_runs import compare  # noqa: E402

from test_resume_matrix import PIPELINE, accounting_holds, lay_out, markers  # noqa: E402


def _dolma(path: Path, rows: list[tuple[str, str]]) -> None:
    """A Dolma file (JSON lines, gzip) of (id, text)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"id": i, "text": t, "source": "test", "metadata": {"url": f"https://example.com/{i}"}}) for i, t in rows]
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0))


def _texts(ws: Path, glob: str, n: int, skip: int = 0) -> list[str]:
    files = sorted(ws.glob(glob))
    return [t for f in files for t in pq.read_table(f, columns=["text"]).column("text").to_pylist()][skip:skip + n]


def _add_source(ws: Path, name: str, path: str, first: bool) -> None:
    text = (ws / "pipeline.yaml").read_text()
    text = text.replace("sources:\n", f"sources:\n  {name}: {{format: dolma, paths: '{path}'}}\n")
    order = "[fwe, dclm, zyda, dolma_cc]"
    now = text.split("priority: ")[1].split("\n")[0]
    assert now.startswith("[") and order[1:-1] in now
    text = text.replace(f"priority: {now}", f"priority: [{name}, {now[1:]}" if first else f"priority: {now[:-1]}, {name}]")
    (ws / "pipeline.yaml").write_text(text)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    ws = tmp_path_factory.mktemp("append") / "ws"
    return lay_out(ws)


def _run(ws: Path, out: str, capfd=None) -> list[str]:
    """Run the pipeline into `out`; with `capfd`, not quietly, and return the lines it said."""
    if capfd is not None:
        capfd.readouterr()
    assert run_cli("pipeline.yaml", "--output", out, "--inline", "--no-report", *([] if capfd is not None else ["-q"])) == 0
    if capfd is None:
        return []
    said = capfd.readouterr()
    return (said.out + said.err).splitlines()


def _equals_fresh(ws: Path, label: str) -> None:
    shutil.rmtree(ws / "fresh", ignore_errors=True)
    _run(ws, "fresh")
    differ = compare(str(ws / "fresh"), str(ws / "run"))
    assert differ == [], f"{label}: {differ[:10]}"
    accounting_holds(ws / "run")


@pytest.mark.slow  # three appends, each compared with a whole fresh run
def test_three_appends_compute_only_new_work_and_equal_a_fresh_run(corpus, monkeypatch, capfd):
    ws = corpus
    monkeypatch.chdir(ws)
    _run(ws, "run")
    accounting_holds(ws / "run")

    # 1. a new file in an existing source (dolma_cc), with copies of FineWeb-Edu texts planted in it
    before = markers(ws / "run")
    planted = _texts(ws, "corpus/fwe/data/CC-MAIN-2024-10/*.parquet", 6)
    _dolma(ws / "corpus/dolma_cc/data/cc_en_head/aaa-new-dump.json.gz",
           [(f"new-{i}", t) for i, t in enumerate(planted)] + [(f"fresh-{i}", f"an entirely new page number {i} " * 30) for i in range(5)])
    lines = _run(ws, "run", capfd)
    after = markers(ws / "run")
    rewritten = {k for k, t in after.items() if before.get(k) != t}
    old_signals = {k for k in before if k.startswith("signals/shards/")}
    assert old_signals and not (old_signals & rewritten), "an unchanged shard's signals were computed again"
    assert not any(k.startswith("quality/model-q/zyda/") for k in rewritten), "a model scored an unchanged shard again"
    new_signals = {k for k in after if k.startswith("signals/shards/")} - set(before)
    assert len(new_signals) == 1
    assert any("[signals]" in line and "reused, 1 new" in line for line in lines), lines
    old_minhash = {k for k in before if k.startswith("minhash/shards/")}
    assert old_minhash and not (old_minhash & rewritten), "an unchanged shard's signatures were computed again"
    assert any("[minhash]" in line and "reused, 1 new" in line for line in lines), lines
    assert any("[dedup] 0 of" in line and "partitions reused" in line for line in lines), lines   # (its whole graph)
    _equals_fresh(ws, "a file added to dolma_cc")

    # 2. a new source of the lowest priority, and more hash partitions of band keys from now on (as when a corpus
    # grows past a multiple of 250,000 documents): the kept shards' band rows are split again, not recomputed
    monkeypatch.setattr("curate.dedup.layout.DOCS_PER_PARTITION", 40)
    _dolma(ws / "corpus/extra/part-0.json.gz", [(f"x-{i}", f"extra source page {i} about rivers and mountains " * 20) for i in range(8)])
    _add_source(ws, "extra", "corpus/extra/*.json.gz", first=False)
    before = markers(ws / "run")
    lines = _run(ws, "run", capfd)
    after = markers(ws / "run")
    minhash = {k for k, t in after.items() if k.startswith("minhash/shards/") and before.get(k) != t}
    assert minhash and all(k.startswith("minhash/shards/extra/") for k in minhash), sorted(minhash)
    assert any("split again into" in line for line in lines), lines
    partitions = json.loads((ws / "run/_state/minhash/record.json").read_text())["partitions"]
    assert partitions > 1 and [p.name for p in (ws / "run/_work/minhash/bands").iterdir()] == [f"n={partitions}"]
    _equals_fresh(ws, "a lowest-priority source")

    # 3. a new source of the highest priority, copying documents dedup kept: every source's priority moves, and
    # still only the new source's signatures are computed (node numbers are the dedup step's, not stored). Two of the
    # copies are of fwe documents that others were removed for: those stay removed, for the copy (their ledger's detail
    # changes, not its ids)
    clusters = pq.read_table(ws / "run/dedup/clusters").to_pylist()
    reps = {r["rep_id"] for r in clusters if r["rep_source"] == "fwe" and not r["kept"]}
    fwe = pa.concat_tables(pq.read_table(f, columns=["id", "text"]) for f in sorted(ws.glob("run/docs/fwe/*.parquet"))).to_pylist()
    firsts = [d["text"] for d in fwe if d["id"] in reps][:2]
    assert firsts, "no fwe document was kept for another: the case below is not tested"
    kept = _texts(ws, "run/kept/dclm/*.parquet", 5)
    _dolma(ws / "corpus/top/part-0.json.gz", [(f"top-{i}", t) for i, t in enumerate(kept + firsts)])
    _add_source(ws, "top", "corpus/top/*.json.gz", first=True)
    before, ledgers = markers(ws / "run"), _dedup_ledgers(ws / "run")
    import curate.stages.tokenize as tokenize

    tokenized = []
    encode = tokenize.encode_documents
    monkeypatch.setattr(tokenize, "encode_documents", lambda tok, texts, *a: tokenized.append(len(texts)) or encode(tok, texts, *a))
    _run(ws, "run")
    monkeypatch.setattr(tokenize, "encode_documents", encode)
    after = markers(ws / "run")
    minhash = {k for k, t in after.items() if k.startswith("minhash/shards/") and before.get(k) != t}
    assert minhash and all(k.startswith("minhash/shards/top/") for k in minhash), sorted(minhash)
    # the mix plan changed (dclm lost documents) but not fwe's epochs: tokenize keeps the fwe shards that lost no document,
    # runs on the new source's (and on the shards that lost documents), and tokenizes only the new source's documents
    lost = {f"tokenize/shards/fwe/{n.removesuffix('.parquet')}.json" for (s, n), (_, ids) in ledgers.items()
            if s == "fwe" and _ids(ws / "run/ledger/dedup" / s / n) != ids}   # (its copies in top took two fwe documents)
    assert {k for k, t in after.items() if k.startswith("tokenize/shards/fwe/") and before.get(k) != t} <= lost, "fwe tokenized again"
    assert {k for k in after if k.startswith("tokenize/shards/top/")}, "the new source was not tokenized"
    assert sum(tokenized) == len(_texts(ws, "run/kept/top/*.parquet", 1000)) > 0, tokenized
    # every node number moved, and some removed documents have a new representative: a shard whose dedup removed the
    # same documents as before is not read again by signals, only one whose removals changed
    moved, same = [], []
    for (source, shard), (data, ids) in ledgers.items():
        now = (ws / "run/ledger/dedup" / source / shard).read_bytes()
        (same if _ids(ws / "run/ledger/dedup" / source / shard) == ids else moved).append((source, shard))
        if now != data and (source, shard) in same:
            assert before[f"signals/shards/{source}/{shard.removesuffix('.parquet')}.json"] == \
                after[f"signals/shards/{source}/{shard.removesuffix('.parquet')}.json"], f"signals ran again on {source}/{shard}"
    assert any((ws / "run/ledger/dedup" / s / n).read_bytes() != ledgers[(s, n)][0] for s, n in same), \
        "no ledger changed only in its detail: the case is not tested"
    assert moved, "the copies of dclm's documents removed nothing"
    _equals_fresh(ws, "a highest-priority source")
    removed = pq.read_table(ws / "run/ledger/dedup/dclm").to_pylist()
    assert sum(r["reason"].endswith(":top") for r in removed) >= len(kept) - 1, "the copies in dclm go to the source above it"


def _ids(path: Path) -> set[str]:
    return set(pq.read_table(path, columns=["id"]).column("id").to_pylist())


def _dedup_ledgers(run: Path) -> dict[tuple[str, str], tuple[bytes, set[str]]]:
    """(source, shard file) -> the dedup ledger's bytes and removed ids."""
    return {(p.parent.name, p.name): (p.read_bytes(), _ids(p)) for p in (run / "ledger/dedup").glob("*/*.parquet")}


def _base(corpus: Path, ws: Path) -> None:
    """A copy of the corpus as it was before any append (the first test adds to the module's corpus)."""
    shutil.copytree(corpus, ws, ignore=shutil.ignore_patterns("run", "fresh"))
    (ws / "pipeline.yaml").write_text(PIPELINE)
    for extra in ("corpus/extra", "corpus/top", "corpus/dolma_cc/data/cc_en_head/aaa-new-dump.json.gz"):
        p = ws / extra
        shutil.rmtree(p) if p.is_dir() else p.unlink(missing_ok=True)


def _kept_ids(run: Path) -> set[tuple[str, str]]:
    return {(f.parent.name, i) for f in (run / "kept").glob("*/*.parquet") for i in pq.read_table(f, columns=["id"]).column("id").to_pylist()}


def test_frozen_mode_keeps_every_published_document_and_removes_new_copies_of_them(corpus, monkeypatch, tmp_path, capfd):
    ws = tmp_path / "ws"
    _base(corpus, ws)
    monkeypatch.chdir(ws)
    _run(ws, "run")
    shutil.copytree(ws / "run", ws / "published")
    published = _kept_ids(ws / "published")

    # a new source of the highest priority whose documents copy published ones: without frozen mode they would win
    kept = _texts(ws, "run/kept/dclm/*.parquet", 5)
    _dolma(ws / "corpus/top/part-0.json.gz", [(f"top-{i}", t) for i, t in enumerate(kept)] + [("top-own", "a page of its own " * 40)])
    _add_source(ws, "top", "corpus/top/*.json.gz", first=True)
    text = (ws / "pipeline.yaml").read_text()
    assert "dedup: {policy: cross_source}" in text
    (ws / "pipeline.yaml").write_text(text.replace("dedup: {policy: cross_source}",
                                                   "dedup: {policy: cross_source, frozen: published/manifest.json}"))
    lines = _run(ws, "run", capfd)
    accounting_holds(ws / "run")
    now = _kept_ids(ws / "run")
    assert published <= now, f"frozen documents removed: {sorted(published - now)[:5]}"
    assert ("top", "top-own") in now
    removed = pq.read_table(ws / "run/ledger/dedup/top").to_pylist()
    copies = [r for r in removed if r["id"].startswith("top-") and r["id"] != "top-own"]
    assert len(copies) >= len(kept) - 1, removed
    for r in copies:
        assert r["reason"] == "minhash_duplicate_of:dclm" and "(dclm, frozen)" in r["detail"], r
        assert ("dclm", r["detail"].split()[1]) in published, r
    said = [line for line in lines if "removed as duplicates of frozen ones" in line]
    assert said and f"{len(copies)} new documents removed" in said[0], lines
    assert f"{len(published):,} of its {len(published):,} kept documents found" in said[0], said
    assert all(not r["detail"] or "frozen" not in r["detail"] for p in (ws / "run/ledger/dedup").glob("[!t]*")
               for r in pq.read_table(p).to_pylist()), "a document of an older source removed for a frozen one"


def test_tie_break_first_is_input_order_a_later_files_copy_goes_and_an_earlier_files_copy_stays(corpus, monkeypatch, tmp_path):
    """`tie_break: first` keeps the copy read from the file that comes first in input order (by path), whatever the
    hash names of the docs shards: pages copied into a file that sorts after theirs are removed in favour of the pages,
    which stay; copies in a file that sorts before are the ones kept. A dump named by date then never replaces a
    published page with its own copy."""
    ws = tmp_path / "ws"
    _base(corpus, ws)
    (ws / "pipeline.yaml").write_text(PIPELINE.replace("dedup: {policy: cross_source}", "dedup: {policy: all}"))
    monkeypatch.chdir(ws)
    _run(ws, "run")
    folder = ws / "corpus/fwe/data/CC-MAIN-2024-10"
    pages = pq.read_table(folder / "000_00000.parquet")
    kept = {i for s, i in _kept_ids(ws / "run") if s == "fwe"}
    rows = [r for r in pages.to_pylist() if r["id"] in kept][:8]
    later, earlier = rows[:4], rows[4:]
    for name, part, tag in (("zzz_later.parquet", later, "later"), ("0-early.parquet", earlier, "earlier")):
        pq.write_table(pa.Table.from_pylist([{**r, "id": f"{r['id']}-{tag}"} for r in part], schema=pages.schema), folder / name)
    _run(ws, "run")
    removed = {r["id"]: r["detail"] for r in pq.read_table(ws / "run/ledger/dedup/fwe").to_pylist()}
    for r in later:
        assert r["id"] not in removed and removed[f"{r['id']}-later"].startswith(f"kept {r['id']} (fwe)"), removed.get(f"{r['id']}-later")
    for r in earlier:
        assert f"{r['id']}-earlier" not in removed and removed[r["id"]].startswith(f"kept {r['id']}-earlier (fwe)"), removed.get(r["id"])


def test_frozen_needs_sound_mode_and_an_earlier_run(corpus, monkeypatch, tmp_path, capfd):
    ws = tmp_path / "ws"
    _base(corpus, ws)
    monkeypatch.chdir(ws)
    text = (ws / "pipeline.yaml").read_text()
    (ws / "pipeline.yaml").write_text(text.replace("dedup: {policy: cross_source}",
                                                   "dedup: {policy: cross_source, mode: unverified, frozen: published}"))
    capfd.readouterr()
    assert run_cli("pipeline.yaml", "--output", "run", "--inline", "-q", "--no-report") == 2
    assert "stages.dedup.frozen" in capfd.readouterr().err
    (ws / "pipeline.yaml").write_text(text.replace("dedup: {policy: cross_source}", "dedup: {policy: cross_source, frozen: nowhere}"))
    assert run_cli("pipeline.yaml", "--output", "run", "--inline", "-q", "--no-report") == 2
    err = capfd.readouterr().err
    assert "stages.dedup.frozen: nowhere does not exist" in err and "Traceback" not in err
    (ws / "pipeline.yaml").write_text(text)
    assert run_cli("pipeline.yaml", "--output", "run", "--inline", "-q", "--no-report") == 0   # the "run" to freeze
    (ws / "pipeline.yaml").write_text(text.replace("dedup: {policy: cross_source}", "dedup: {policy: cross_source, frozen: run}"))
    assert run_cli("pipeline.yaml", "--output", "run", "--inline", "-q", "--no-report") == 2
    assert "names this run's own output" in capfd.readouterr().err


@pytest.mark.slow  # kill -9
def test_kill_9_during_an_append_then_a_rerun_equals_a_fresh_run(corpus, monkeypatch, tmp_path):
    ws = tmp_path / "ws"
    _base(corpus, ws)
    monkeypatch.chdir(ws)
    _run(ws, "run")
    _dolma(ws / "corpus/dolma_cc/data/cc_en_head/zzz-new.json.gz",
           [(f"late-{i}", f"a late page number {i} on gardening and soil " * 25) for i in range(12)])
    signals = ws / "run/_state/signals/shards/dolma_cc"
    old = {p.name for p in signals.glob("*.json")}
    cmd = [sys.executable, "-m", "curate", "run", "pipeline.yaml", "--output", "run", "--inline", "-q", "--no-report"]
    kill_9_when(cmd, lambda: signals.exists() and {p.name for p in signals.glob("*.json")} - old, 180, cwd=ws)
    _run(ws, "run")
    _equals_fresh(ws, "after kill -9")


def test_ingest_reads_only_files_added_after_the_others_and_settles_their_ids_against_the_old_ones(corpus, monkeypatch, tmp_path):
    """A file that sorts after a source's others is read alone (its id copies of old documents are still bad records);
    one that sorts first reads the files after it again, which lose the ids it claims; both equal a fresh run."""
    ws = tmp_path / "ws"
    _base(corpus, ws)
    monkeypatch.chdir(ws)
    _run(ws, "run")
    old_id = pq.read_table(sorted((ws / "run/docs/dolma_cc").glob("*.parquet"))[0], columns=["id"]).column("id")[0].as_py()
    before = markers(ws / "run")
    _dolma(ws / "corpus/dolma_cc/data/cc_en_head/zzz-new.json.gz",
           [(old_id, "a later copy of an old id " * 20)] + [(f"late-{i}", f"a late page number {i} on bees " * 25) for i in range(4)])
    _run(ws, "run")
    after = markers(ws / "run")
    read = {k for k, t in after.items() if k.startswith("ingest/read/") and before.get(k) != t}
    assert len(read) == 1, sorted(read)   # the new file alone
    new_shard = read.pop().rsplit("/", 1)[-1].removesuffix(".json")
    ledger = pq.read_table(ws / f"run/ledger/ingest/dolma_cc/{new_shard}.parquet").to_pylist()
    assert [r["reason"] for r in ledger] == ["bad_record:duplicate_id"] and old_id in ledger[0]["id"], ledger
    _equals_fresh(ws, "a file that sorts last")

    _dolma(ws / "corpus/dolma_cc/data/cc_en_head/000-first.json.gz", [(old_id, "the first copy of an old id now " * 20)])
    _run(ws, "run")
    removed = [r for p in (ws / "run/ledger/ingest/dolma_cc").glob("*.parquet") for r in pq.read_table(p).to_pylist()]
    assert sum(r["reason"] == "bad_record:duplicate_id" for r in removed) == 2, removed   # the old shard's copy too
    _equals_fresh(ws, "a file that sorts first")


def test_a_no_op_rerun_loads_no_tokenizer_and_reads_no_cluster_file_but_still_warns(corpus, monkeypatch, tmp_path, capfd):
    """A re-run with nothing new skips what only work needs: the tokenizer's load (most of a no-op's fixed cost) and
    dedup's alarm scan of every cluster file (its record says the same); an append still does both."""
    ws = tmp_path / "ws"
    _base(corpus, ws)
    monkeypatch.chdir(ws)
    text = (ws / "pipeline.yaml").read_text()
    (ws / "pipeline.yaml").write_text(text.replace("dedup: {policy: cross_source}", "dedup: {policy: cross_source, max_cluster: 1}"))
    _run(ws, "run")
    import curate.dedup.alarms as alarms
    import curate.stages.tokenize as tokenize

    calls = {"tokenizer": 0, "clusters": 0}
    load, sizes = tokenize.TokenizeStage.load_tokenizer, alarms.cluster_sizes

    def counted_load(self, *args):
        calls["tokenizer"] += 1
        return load(self, *args)

    def counted_sizes(root):
        calls["clusters"] += 1
        return sizes(root)

    monkeypatch.setattr(tokenize.TokenizeStage, "load_tokenizer", counted_load)
    monkeypatch.setattr(alarms, "cluster_sizes", counted_sizes)
    lines = _run(ws, "run", capfd)
    assert calls == {"tokenizer": 0, "clusters": 0}, calls
    assert any("warning" in line and "max_cluster" in line for line in lines), lines   # the alarm, from the record
    _dolma(ws / "corpus/dolma_cc/data/cc_en_head/zzz-new.json.gz",
           [(f"late-{i}", f"a late page number {i} on weaving and looms " * 25) for i in range(6)])
    _run(ws, "run")
    assert calls["tokenizer"] >= 1 and calls["clusters"] == 1, calls
    _equals_fresh(ws, "an append after a no-op")


@pytest.mark.slow  # starts Ray
def test_an_append_on_ray_workers_equals_a_fresh_inline_run(corpus, monkeypatch, tmp_path):
    """The append's reuse (signatures, band keys split again, kept token ids) works the same in Ray tasks and actors."""
    ws = tmp_path / "ws"
    _base(corpus, ws)
    monkeypatch.chdir(ws)
    _run(ws, "run")
    monkeypatch.setattr("curate.dedup.layout.DOCS_PER_PARTITION", 40)   # in the driver, which plans the partitions
    kept = _texts(ws, "run/kept/dclm/*.parquet", 4)
    _dolma(ws / "corpus/dolma_cc/data/cc_en_head/zzz-new.json.gz", [(f"late-{i}", t) for i, t in enumerate(kept)]
           + [(f"own-{i}", f"{t}\n\nA paragraph of its own, number {i}.") for i, t in enumerate(_texts(ws, "run/kept/zyda/*.parquet", 4))])
    assert run_cli("pipeline.yaml", "--output", "run", "--workers", "2", "-q", "--no-report") == 0
    _equals_fresh(ws, "an append on 2 Ray workers")


def test_an_append_measures_tokenizes_and_keeps_only_the_new_shard(corpus, monkeypatch, tmp_path):
    """A file of new pages added to dolma_cc: mix measures only its shard (the others' measurements are kept by what
    they read), and with every source's epochs unchanged in the plan, mix puts back every other shard's accounting,
    and tokenize, pack and kept run on that shard alone (pack merges every source again)."""
    ws = tmp_path / "ws"
    _base(corpus, ws)
    monkeypatch.chdir(ws)
    import curate.rundir.digests as digests

    monkeypatch.setattr(digests, "SETTLED_NS", 0)   # (a test's runs are seconds apart: every file counts as settled)
    _run(ws, "run")
    import curate.manifest.build as build
    import curate.stages.mix as mix

    import curate.rundir.outcomes as outcomes

    import curate.dedup.graph as graph

    measured, restored, decided = [], [], []
    measure, restore, decisions = mix.MixStage.measure, outcomes.restore, graph.shard_decisions
    monkeypatch.setattr(graph, "shard_decisions", lambda root, tag, sources: decided.append(tag) or decisions(root, tag, sources))
    monkeypatch.setattr(mix.MixStage, "measure", lambda self, spec, shard: measured.append(shard) or measure(self, spec, shard))
    monkeypatch.setattr(outcomes, "restore", lambda folder, name, *a, **kw: (lambda got: got is not None and restored.append(
        (folder.rstrip("/").rsplit("/", 1)[-1], name)) or got)(restore(folder, name, *a, **kw)))
    hashed, hash_files = [], build.hash_files
    monkeypatch.setattr(build, "hash_files", lambda run, paths, *a, **kw: hashed.extend(paths) or hash_files(run, paths, *a, **kw))
    before, clusters = markers(ws / "run"), _clusters_bytes(ws / "run")
    _dolma(ws / "corpus/dolma_cc/data/cc_en_head/zzz-new.json.gz",
           [(f"late-{i}", f"a late page number {i} on pottery and kilns " * 25) for i in range(6)])
    _run(ws, "run")
    after = markers(ws / "run")
    new = {k.rsplit("/", 1)[-1].removesuffix(".json") for k in after if k.startswith("ingest/read/") and k not in before}
    assert len(new) == 1, new
    assert [(s.source, s.shard) for s in measured] == [("dolma_cc", *new)], measured
    for step in ("tokenize", "pack", "kept"):   # pack: its other shards' token documents and copies are the same
        again = {k for k, t in after.items() if k.startswith(f"{step}/shards/") and before.get(k) != t}
        assert again == {f"{step}/shards/dolma_cc/{next(iter(new))}.json"}, (step, sorted(again))
    # the graph is labelled again, and a dolma_cc shard after the new one in the run's order has new node numbers; but
    # cluster numbers do not follow node numbers, so every old shard's ledger and clusters come out the same: put back
    old = {k.removeprefix("dedup/shards/").removesuffix(".json") for k in before if k.startswith("dedup/shards/")}
    assert {k for k, b in _clusters_bytes(ws / "run").items() if clusters.get(k) == b} == old
    assert {name for kind, name in restored if kind == "accounting"} == old, restored
    # ... by what the graph sent each of them, by digest (`bundles.digest`): no old shard's decisions were read
    assert len(decided) == 1, decided
    # and the mix step's accounting of every old shard is put back: their documents and their sources' epochs are the same
    assert {name for kind, name in restored if kind == "outcomes"} == old, restored
    assert {kind for kind, _ in restored} == {"accounting", "resolve", "outcomes"}
    # the manifest hashed only files the append wrote: the new shard's kept documents, not the old shards' (their
    # digests are the kept ones, unchanged since the last run's manifest); its verify read every file
    assert {p for p in hashed if p.startswith("kept/")} == {f"kept/dolma_cc/{next(iter(new))}.parquet"}, sorted(hashed)
    restored.clear()
    _equals_fresh(ws, "an append measured by shard")
    measured.clear()
    _run(ws, "run")   # a no-op re-run after an append: its measurements are kept, even of the shards it did not measure
    assert measured == [], measured


def test_a_removed_file_takes_its_kept_token_ids_with_it(corpus, monkeypatch, tmp_path):
    """The tokenize step's kept ids (`_work/tokenize/tokens/`) follow the run's docs shards: a file added and then
    removed leaves none of its ids behind."""
    ws = tmp_path / "ws"
    _base(corpus, ws)
    monkeypatch.chdir(ws)
    late = ws / "corpus/dolma_cc/data/cc_en_head/zzz-late.json.gz"
    _dolma(late, [(f"late-{i}", f"a late page number {i} on pottery and kilns " * 25) for i in range(6)])

    def kept_ids() -> set[str]:
        return {f"{p.parent.name}/{p.stem}" for p in (ws / "run/_work/tokenize/tokens").glob("*/*/*.arrow")}

    def shards() -> set[str]:
        return {f"{p.parent.name}/{p.stem}" for p in (ws / "run/docs").glob("*/*.parquet")}

    _run(ws, "run")
    assert kept_ids() == shards()
    with_late = shards()
    late.unlink()
    _run(ws, "run")
    assert kept_ids() == shards() and len(with_late - shards()) == 1


def _clusters_bytes(run: Path) -> dict[str, bytes]:
    return {f"{p.parent.name}/{p.stem}": p.read_bytes() for p in (run / "dedup" / "clusters").glob("*/*.parquet")}


def _plan(run: Path) -> dict:
    return json.loads((run / "_state/mix/record.json").read_text())["plan"]["sources"]


def _ledger_bytes(run: Path, step: str) -> dict[str, bytes]:
    return {f"{p.parent.name}/{p.stem}": p.read_bytes() for p in (run / "ledger" / step).glob("*/*.parquet")}


def _weights_run(corpus, monkeypatch, tmp_path: Path, weights: str) -> Path:
    """A workspace whose pipeline mixes by `weights` instead of epochs, run once; returns the workspace."""
    ws = tmp_path / "ws"
    _base(corpus, ws)
    text = (ws / "pipeline.yaml").read_text()
    (ws / "pipeline.yaml").write_text(text.replace("mix: {epochs: {fwe: 1.0, dclm: 1.0, zyda: 0.5, dolma_cc: 0.8}}",
                                                   f"mix: {{weights: {weights}}}"))
    monkeypatch.chdir(ws)
    _run(ws, "run")
    return ws


def test_a_weights_append_that_moves_every_sources_epochs_rewrites_no_unchanged_token_shard(corpus, monkeypatch, tmp_path):
    """`weights` with dolma_cc the limiting source: a file added to it raises the mixture's total, so every source's
    epochs move. Tokenize writes (id, tokens), the copies are the pack step's: it rewrites the new shard and those whose
    documents the mix downsamples otherwise (their mix ledger changed), never a shard whose documents are the same
    (old main keyed each shard by its source's epochs and rewrote every one). Pack re-packs; the run equals a fresh one."""
    ws = _weights_run(corpus, monkeypatch, tmp_path, "{fwe: 1.0, dclm: 1.0, zyda: 1.0, dolma_cc: 30.0}")
    plan, before, mixed = _plan(ws / "run"), markers(ws / "run"), _ledger_bytes(ws / "run", "mix")
    tokens = {p: p.stat().st_mtime_ns for p in (ws / "run/tokenize").glob("*/*.parquet")}
    assert plan["dolma_cc"]["epochs"] == pytest.approx(1.0) and all(plan[s]["epochs"] < 1 for s in ("fwe", "dclm", "zyda"))
    _dolma(ws / "corpus/dolma_cc/data/cc_en_head/zzz-new.json.gz",
           [(f"late-{i}", f"a late page number {i} on pottery, kilns and glazes " * 25) for i in range(4)])
    _run(ws, "run")
    after, moved = _plan(ws / "run"), _ledger_bytes(ws / "run", "mix")
    assert all(after[s]["epochs"] > plan[s]["epochs"] for s in ("fwe", "dclm", "zyda")), (plan, after)
    new = {k.rsplit("/", 1)[-1].removesuffix(".json") for k in markers(ws / "run") if k.startswith("ingest/read/") and k not in before}
    changed = {k for k in moved if mixed.get(k) != moved[k]}   # shards whose live documents the plan changed
    same = [k for k in mixed if k in moved and mixed[k] == moved[k] and not k.startswith("dolma_cc/")]
    assert same, "no shard of a source whose epochs moved kept its documents: the test shows nothing"
    again = {k.removeprefix("tokenize/shards/").removesuffix(".json") for k, t in markers(ws / "run").items()
             if k.startswith("tokenize/shards/") and before.get(k) != t}
    assert again == {f"dolma_cc/{s}" for s in new} | changed, sorted(again)
    for path, mtime in tokens.items():   # the token files of the shards it did not redo were not written again
        assert (f"{path.parent.name}/{path.stem}" in again) or path.stat().st_mtime_ns == mtime, path
    packed = {k.removeprefix("pack/shards/").removesuffix(".json") for k, t in markers(ws / "run").items()
              if k.startswith("pack/shards/") and before.get(k) != t}
    assert packed == again, sorted(packed)   # every copy is 1 here: pack redoes the shards whose documents changed
    _equals_fresh(ws, "a weights append")


def test_an_append_that_moves_a_repeated_sources_epochs_repacks_only_the_shards_whose_copies_moved(corpus, monkeypatch, tmp_path):
    """`weights` with a `total_tokens` past every source's tokens: each is repeated 1.6 epochs, so the mix removes
    nothing and a document's copies are 1 or 2. A page added to dclm lowers dclm's epochs a little: its old shards'
    token documents stay as they were, and only a shard where some document loses a copy is packed again (pack keys a
    shard by the mix step's digest of its copies, not by its source's epochs); the run equals a fresh one."""
    probe = _weights_run(corpus, monkeypatch, tmp_path / "probe", "{fwe: 1.0, dclm: 1.0, zyda: 1.0, dolma_cc: 1.0}")
    available = {s: p["available_tokens"] for s, p in _plan(probe / "run").items()}
    weights = "{" + ", ".join(f"{s}: {n:.0f}" for s, n in available.items()) + "}"   # each source 1.6 epochs
    ws = _weights_run(corpus, monkeypatch, tmp_path, f"{weights}, total_tokens: {1.6 * sum(available.values()):.0f}")
    plan, before = _plan(ws / "run"), markers(ws / "run")
    assert all(p["epochs"] == pytest.approx(1.6, rel=1e-3) for p in plan.values()), plan
    _dclm(ws / "corpus/dclm/global-shard_01_of_10/local-shard_9_of_10/zzz_late.jsonl.zst",
          [" ".join(f"lateword{j}" for j in range(25))])   # a page: dclm's epochs move by about a thousandth
    _run(ws, "run")
    after = _plan(ws / "run")
    assert after["dclm"]["epochs"] < plan["dclm"]["epochs"] and all(after[s] == plan[s] for s in ("fwe", "zyda", "dolma_cc"))

    def redone(step: str) -> set[str]:
        return {k.removeprefix(f"{step}/shards/").removesuffix(".json") for k, t in markers(ws / "run").items()
                if k.startswith(f"{step}/shards/") and before.get(k) != t}

    old = {k.removeprefix("pack/shards/").removesuffix(".json") for k in before if k.startswith("pack/shards/dclm/")}
    new = redone("tokenize")
    assert len(new) == 1 and not new & old, new   # only the new file's documents are tokenized
    assert new <= redone("pack") <= old | new, sorted(redone("pack"))
    assert old - redone("pack"), "every old dclm shard was packed again, as if keyed by dclm's epochs"
    merged = {k for k, t in markers(ws / "run").items() if k.startswith("pack/merge/") and before.get(k) != t}
    # the other sources' shards are all as they were: not merged again
    assert merged == {"pack/merge/dclm.megatron.json", "pack/merge/dclm.datatrove.json"}, merged
    _equals_fresh(ws, "a repeated source's epochs moved")


def _dclm(path: Path, texts: list[str]) -> None:
    """A DCLM file (JSON lines, zstd) of texts, each with its own url (the id)."""
    import zstandard

    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"text": t, "url": f"https://example.com/late/{i}"}) for i, t in enumerate(texts)]
    path.write_bytes(zstandard.ZstdCompressor().compress(("\n".join(lines) + "\n").encode()))


def test_a_source_that_grows_under_weights_rewrites_its_shards_from_kept_token_ids_without_reading_text(corpus, monkeypatch, tmp_path):
    """`weights` with fwe the limiting source: a file added to dclm lowers dclm's epochs, so the mix drops more of its
    old documents and every dclm shard is recomputed. Their texts are those their kept token ids came from, and every
    live document has kept ids: the shards are written from those ids without their text being read (only the new
    file's texts are hashed and tokenized), and the run equals a fresh one."""
    ws = _weights_run(corpus, monkeypatch, tmp_path, "{fwe: 1.0, dclm: 1.0, zyda: 0.2, dolma_cc: 0.2}")
    plan, before = _plan(ws / "run"), markers(ws / "run")
    assert plan["fwe"]["epochs"] == pytest.approx(1.0) and 0.5 < plan["dclm"]["epochs"] < 1
    late = [" ".join(f"late{i}word{j}" for j in range(25)) for i in range(60)]   # about a quarter more dclm tokens
    _dclm(ws / "corpus/dclm/global-shard_01_of_10/local-shard_9_of_10/zzz_late.jsonl.zst", late)
    import curate.tokens.cache as cache

    hashed, asked = [], []
    hashes, prefetch = cache.text_hashes, fs.prefetch
    monkeypatch.setattr(cache, "text_hashes", lambda texts: hashed.append(len(texts)) or hashes(texts))
    monkeypatch.setattr(fs, "prefetch", lambda paths, *a: asked.extend(p for p in paths if os.path.exists(p)) or prefetch(paths, *a))
    _run(ws, "run")
    monkeypatch.setattr(cache, "text_hashes", hashes)
    assert _plan(ws / "run")["dclm"]["epochs"] < plan["dclm"]["epochs"]
    again = {k for k, t in markers(ws / "run").items() if k.startswith("tokenize/shards/dclm/") and before.get(k) != t}
    old = {k for k in before if k.startswith("tokenize/shards/dclm/")}
    assert old & again, "no old dclm shard was recomputed: the test shows nothing"
    fresh = [k.removeprefix("tokenize/shards/").removesuffix(".json") for k in again - old]
    written = sum(pq.read_metadata(ws / "run/tokenize" / f"{k}.parquet").num_rows for k in fresh)
    assert len(fresh) == 1 and sum(hashed) == written, f"texts of old shards were read and hashed: {hashed}, {written}"
    kept_ids = {p.rsplit("/", 2)[-2] + "/" + p.rsplit("/", 1)[-1].removesuffix(cache.SUFFIX) for p in asked
                if "/_work/tokenize/tokens/" in p}
    assert {k.removeprefix("tokenize/shards/").removesuffix(".json") for k in old & again} <= kept_ids   # asked for before read
    for kept in ("/_work/mix/outcomes/dclm/", "/_work/dedup/outcomes/accounting/dclm/", "/_work/dedup/outcomes/resolve/"):
        assert any(kept in p for p in asked), f"no kept record under {kept} was asked for before its task read it"
    _equals_fresh(ws, "a source that grows under weights")
