"""Resume never serves a stale decision: for each mutation of a finished run's configuration or files, the
resumed run equals a fresh run of the mutated configuration byte for byte, and exactly the stages that
depend on the mutation are recomputed (seen on the task markers, not on timing).

One base run (ingest, minhash, dedup, signals, filter with a recipe file, classify, dual_use, mix,
tokenize, pack, manifest over a 200-document sample) is restored at the same path before each case, so
that paths, sizes and modification times are those of the base run.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
import shutil
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.dualuse import demo_terms_path
from curate.models.train import train_fasttext
from curate.sample import make_sample
from curate.sample import text as T
from curate.sample.models import PARAMS
from curate.sample.topic import topic_page

from conftest import kill_9_when, run_cli, tree_digest

pytestmark = pytest.mark.slow  # the whole resume matrix

STAGES = ["ingest", "minhash", "dedup", "signals", "quality_filter", "quality", "dual_use", "mix", "tokenize", "pack",
          "kept", "manifest"]
AFTER_MIX = {"mix", "tokenize", "pack", "kept", "manifest"}
ALL = set(STAGES)

PIPELINE = """name: matrix
priority: [fwe, dclm, zyda, dolma_cc]
sources:
  fwe: {format: fineweb, paths: 'corpus/fwe/data/CC-MAIN-2024-10/*.parquet'}
  dclm: {format: dclm, paths: 'corpus/dclm/global-shard_01_of_10/local-shard_*/*.jsonl.zst'}
  zyda: {format: zyda, paths: 'corpus/zyda/data/zyda_c4-en/*.parquet'}
  dolma_cc: {format: dolma, paths: 'corpus/dolma_cc/data/cc_en_head/*.json.gz'}
stages:
  ingest: {}
  minhash: {preset: zyda2}
  dedup: {policy: cross_source}
  signals: {langid: false}
  quality_filter:
    use: filter
    recipes: {all: [mini]}
    where: {fwe: int_score >= 3}
  quality:
    use: classify
    models:
      q: {kind: fasttext, path: models/q.bin, sources: [zyda, dolma_cc]}
    keep: {zyda: "q_label = 'High'", dolma_cc: "q_label = 'High'"}
  dual_use: {terms: terms.txt, model: {kind: fasttext, path: models/du.bin, label: flag}}
  mix: {epochs: {fwe: 1.0, dclm: 1.0, zyda: 0.5, dolma_cc: 0.8}}
  tokenize: {tokenizer: gpt2}
  pack: {seq_len: 257, formats: [megatron, datatrove]}
  manifest: {}
"""
RECIPE = "name: mini\nrules:\n  words: rps_doc_word_count >= 20\n"


def _train(ws: Path) -> None:
    """Second versions of both models, with the classes swapped: what a retrain to the same path gives."""
    rng = random.Random(7)
    params = {**PARAMS, "lr": 0.2, "epoch": 10}
    good, junk = [T.english_article(rng) for _ in range(150)], [T.junk_page(rng)[0] for _ in range(150)]
    train_fasttext(junk, good, ws / "spare" / "q.bin", labels=("High", "Low"), **params)
    howto, story = [topic_page(rng, "howto") for _ in range(150)], [topic_page(rng, "story") for _ in range(150)]
    train_fasttext(story, howto, ws / "spare" / "du.bin", labels=("flag", "ok"), **params)


def _tokenizer(path: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"<|endoftext|>": 0, "[UNK]": 1, **{w: i + 2 for i, w in enumerate("the of and to a in is it that for".split())}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.add_special_tokens(["<|endoftext|>"])
    path.parent.mkdir(parents=True, exist_ok=True)
    tok.save(str(path))


def _plant_duplicates(ws: Path) -> None:
    """Copies of FineWeb-Edu texts in a Dolma file and a DCLM-like one: dedup has cross-source clusters for the
    priority to decide."""
    texts = pq.read_table(sorted((ws / "corpus/fwe/data/CC-MAIN-2024-10").glob("*.parquet"))[0], columns=["text"]).column("text")
    src = ws / "corpus/dolma_cc/data/cc_en_head/cc_en_head-0000.json.gz"
    first = json.loads(gzip.decompress(src.read_bytes()).decode().splitlines()[0])
    rows = [json.dumps({**first, "id": f"planted-{i}", "text": t}) for i, t in enumerate(texts.to_pylist()[:6])]
    (src.parent / "cc_en_head-0001.json.gz").write_bytes(gzip.compress(("\n".join(rows) + "\n").encode(), mtime=0))


def lay_out(ws: Path, plant=None) -> Path:
    """The workspace the matrix (and the append tests) run in: a 200-document sample, its models, terms and recipe."""
    make_sample(ws / "corpus", docs=200, seed=0)
    if plant is not None:
        plant(ws)
    (ws / "models").mkdir()
    shutil.copy2(ws / "corpus/models/quality_standin.bin", ws / "models/q.bin")
    shutil.copy2(ws / "corpus/models/dual_use_demo.bin", ws / "models/du.bin")
    shutil.copy2(demo_terms_path(), ws / "terms.txt")
    (ws / "filters").mkdir()
    (ws / "filters/mini.yaml").write_text(RECIPE)
    (ws / "pipeline.yaml").write_text(PIPELINE)
    return ws


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("resume")
    ws, base = root / "ws", root / "base"
    lay_out(ws, plant=_plant_duplicates)
    _train(ws)
    _tokenizer(ws / "spare/tok/tokenizer.json")
    cwd = os.getcwd()
    os.chdir(ws)
    try:
        assert run_cli("pipeline.yaml", "--output", "run", "--inline", "-q", "--no-report") == 0
    finally:
        os.chdir(cwd)
    shutil.copytree(ws, base)
    return ws, base


# ---- mutations: each edits the workspace and returns --set overrides --------------------------------

def _yaml(ws: Path, old: str, new: str) -> list:
    text = (ws / "pipeline.yaml").read_text()
    assert old in text
    (ws / "pipeline.yaml").write_text(text.replace(old, new))
    return []


def _edit_text(ws: Path) -> list:
    """One document of a Zyda file rewritten in place (its text upper-cased)."""
    path = sorted((ws / "corpus/zyda/data/zyda_c4-en").glob("*.parquet"))[0]
    table = pq.read_table(path)
    texts = table.column("text").to_pylist()
    texts[0] = texts[0].upper()
    pq.write_table(table.set_column(table.column_names.index("text"), "text", pa.array(texts, table.schema.field("text").type)), path)
    return []


def _add_file(ws: Path) -> list:
    src = sorted((ws / "corpus/dolma_cc/data/cc_en_head").glob("*.json.gz"))[0]
    lines = gzip.decompress(src.read_bytes()).decode().splitlines()
    fresh = [json.dumps({**json.loads(line), "id": json.loads(line)["id"] + "-copy"}) for line in lines[:5]]
    (src.parent / "cc_en_head-0009.json.gz").write_bytes(gzip.compress(("\n".join(fresh) + "\n").encode(), mtime=0))
    return []


def _remove_file(ws: Path) -> list:
    sorted((ws / "corpus/dclm/global-shard_01_of_10").rglob("*.jsonl.zst"))[-1].unlink()
    return []


def _replace(ws: Path, spare: str, target: str) -> list:
    """A model retrained to the same path; its modification time is put back, so only the content tells."""
    st = (ws / target).stat()
    shutil.copyfile(ws / "spare" / spare, ws / target)
    os.utime(ws / target, ns=(st.st_atime_ns, st.st_mtime_ns))
    return []


def _append(ws: Path, name: str, text: str) -> list:
    with open(ws / name, "a") as f:
        f.write(text)
    return []


def _tokenizer_file(ws: Path) -> list:
    return ["--set", f"stages.tokenize.tokenizer={ws / 'spare/tok/tokenizer.json'}"]


def _remove_source(ws: Path) -> list:
    text = (ws / "pipeline.yaml").read_text().replace("  zyda: {format: zyda, paths: 'corpus/zyda/data/zyda_c4-en/*.parquet'}\n", "")
    text = text.replace("priority: [fwe, dclm, zyda, dolma_cc]", "priority: [fwe, dclm, dolma_cc]")
    text = text.replace("sources: [zyda, dolma_cc]", "sources: [dolma_cc]").replace('zyda: "q_label = \'High\'", ', "")
    (ws / "pipeline.yaml").write_text(text.replace(", zyda: 0.5", ""))
    return []


def _set(*pairs: str):
    return lambda ws: [a for p in pairs for a in ("--set", p)]


BEFORE_MIX = AFTER_MIX | {"quality", "dual_use"}
MUTATIONS = {
    # (mutation, recomputed stages, phases that must not run again)
    "filter threshold on fwe": (_set("stages.quality_filter.where.fwe=int_score >= 4"), {"quality_filter"} | BEFORE_MIX,
                                ["quality/model-q", "signals"]),
    "classify keep predicate": (_set("stages.quality.keep.zyda=q_score > 0.9"), BEFORE_MIX, ["quality/model-q"]),
    "classify model file replaced": (lambda ws: _replace(ws, "q.bin", "models/q.bin"), BEFORE_MIX, ["quality_filter"]),
    "dual_use model file replaced": (lambda ws: _replace(ws, "du.bin", "models/du.bin"), {"dual_use"} | AFTER_MIX,
                                     ["dual_use/scan"]),
    # tokenize, kept and pack (its shards and merges) reuse every shard whose live documents and copies did not change
    # (only dual_use's table did)
    "dual_use term file edited": (lambda ws: _append(ws, "terms.txt", "\nhoney\nwax\n"), {"dual_use", "mix", "manifest"},
                                  ["quality", "tokenize", "kept", "pack"]),
    "dual_use threshold": (_set("stages.dual_use.threshold=0.95"), {"dual_use", "mix", "manifest"},
                           ["dual_use/scan", "dual_use/classifier", "tokenize", "kept", "pack"]),
    "dual_use switched off": (_set("stages.dual_use.enabled=false"), AFTER_MIX, []),
    "filter recipe file edited in place": (lambda ws: _yaml_file(ws, "filters/mini.yaml", ">= 20", ">= 150"),
                                           {"quality_filter"} | BEFORE_MIX, ["signals"]),
    "classify switched off": (_set("stages.quality.enabled=false"), {"dual_use"} | AFTER_MIX, ["quality_filter"]),
    "filter switched off": (_set("stages.quality_filter.enabled=false"), BEFORE_MIX, ["signals"]),
    "input file edited in place": (_edit_text, ALL, []),
    "input file added": (_add_file, ALL, []),
    # the other shards' results hold (tokenize's too: every source's epochs in the plan are the same)
    "input file removed": (_remove_file, {"ingest", "dedup", "mix", "pack", "manifest"},
                           ["minhash", "signals", "quality_filter", "quality", "dual_use", "tokenize", "kept"]),
    "priority": (_set("priority=[dolma_cc, fwe, dclm, zyda]"), ALL - {"ingest", "minhash"}, ["ingest", "minhash"]),
    "source removed": (_remove_source, ALL - {"ingest", "minhash", "signals", "quality_filter", "tokenize", "pack"},   # the others'
                       ["minhash", "signals", "quality_filter", "tokenize", "pack"]),                                  # copies hold
    # kept reuses every shard: the mix's new plan leaves each shard's ledger as it was (only token ids change)
    "tokenizer": (_tokenizer_file, AFTER_MIX - {"kept"}, ["dual_use", "kept"]),
    "mix epochs": (_set("stages.mix.epochs.dclm=0.7"), AFTER_MIX, ["dual_use"]),
    # more copies, the same documents (no epochs below 1): tokenize writes each document once, pack gives the copies
    "mix epochs above one": (_set("stages.mix.epochs.dclm=2.0"), {"mix", "pack", "manifest"}, ["dual_use", "tokenize", "kept"]),
    "pack seq_len": (_set("stages.pack.seq_len=129"), {"pack", "manifest"}, ["kept", "tokenize"]),
    "pack formats": (_set("stages.pack.formats=[megatron]"), {"pack", "manifest"}, ["kept"]),
    "tokenize eos": (_set("stages.tokenize.eos=false"), {"tokenize", "pack", "manifest"}, ["kept", "mix"]),
    "dedup policy": (_set("stages.dedup.policy=all"), ALL - {"ingest", "minhash"}, ["minhash"]),
    # new columns, the same decisions: every later per-shard step reuses its shards; the global ones recompute
    "signals option": (_set("stages.signals.langid=true"), {"signals", "quality_filter", "mix", "manifest"},
                       ["dedup", "quality", "dual_use", "tokenize", "kept", "pack"]),
    "batch size": (_set("execution.batch_rows=40"), ALL, []),
    "minhash threads (how, not what)": (_set("stages.minhash.threads=3"), {"manifest"}, ["minhash", "dedup"]),  # it records the config
    "step removed": (lambda ws: _yaml(ws, "  dual_use: {terms: terms.txt, model: {kind: fasttext, path: models/du.bin, label: flag}}\n", ""),
                     AFTER_MIX, ["quality"]),
}


# mutations whose new decisions differ from the base run's (so that a stale result could not pass)
CHANGES_DECISIONS = {"filter threshold on fwe", "classify keep predicate", "classify model file replaced", "dual_use model file replaced",
                     "dual_use term file edited", "filter recipe file edited in place", "priority", "source removed", "tokenizer",
                     "input file edited in place", "input file added", "input file removed", "dedup policy", "mix epochs",
                     "mix epochs above one"}

# the sources a stage may recompute for (per-source fingerprints), where a mutation concerns only some
NARROW = {
    "filter threshold on fwe": {"quality_filter": {"fwe"}, "quality": {"fwe"}, "dual_use": {"fwe"}},
    "classify keep predicate": {"quality": {"zyda"}, "dual_use": {"zyda"}},
    "classify model file replaced": {"quality": {"zyda", "dolma_cc"}, "dual_use": {"zyda", "dolma_cc"}},
    "input file edited in place": {"ingest": {"zyda"}, "minhash": {"zyda"}},
    "input file added": {"ingest": {"dolma_cc"}, "minhash": {"dolma_cc"}, "signals": {"dolma_cc"}, "quality_filter": {"dolma_cc"}},
    "input file removed": {"ingest": {"dclm"}},
}


def _yaml_file(ws: Path, name: str, old: str, new: str) -> list:
    path = ws / name
    st = path.stat()
    text = path.read_text()
    path.write_text(text.replace(old, new))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # the same modification time: only the content tells
    return []


# ---- what is compared -------------------------------------------------------------------------------

def markers(run: Path) -> dict[str, int]:
    """Every task marker (stage/phase/task) with its modification time: a recomputed task writes a new one."""
    state = run / "_state"
    return {str(p.relative_to(state)): p.stat().st_mtime_ns for p in state.glob("*/*/**/*.json")}


def recomputed(before: dict, after: dict) -> tuple[set, set]:
    """(stages, stage/phase/source) whose task markers were written again."""
    changed = {k for k, t in after.items() if before.get(k) != t}
    return {k.split("/")[0] for k in changed}, {"/".join(k.removesuffix(".json").split("/")[:3]) for k in changed}


def outputs(run: Path) -> dict[str, str]:
    out = {}
    for part in ("docs", "kept", "ledger", "signals", "quality", "dual_use", "quarantine", "tokenize", "pack", "dedup"):
        for f in sorted((run / part).rglob("*")):
            if f.is_file() and "/_shards/" not in str(f):
                out[str(f.relative_to(run))] = hashlib.sha256(f.read_bytes()).hexdigest()
    manifest = json.loads((run / "manifest.json").read_text())
    manifest.pop("created_at", None)
    # where the run was written is recorded (pipeline.yaml, the resolved config): not a result
    manifest["pipeline"]["resolved"].pop("output", None)
    manifest["files"] = [f for f in manifest["files"] if f["path"] != "pipeline.yaml"]
    for model in manifest.get("models", {}).values():  # what the models cost this run (cached scores are free)
        for key in ("seconds", "seconds_per_1000", "hours_per_billion", "documents"):
            model.pop(key, None)
    out["manifest.json"] = json.dumps(manifest, sort_keys=True)
    return out


def accounting_holds(run: Path) -> None:
    ingested = sum(json.loads(p.read_text())["in"] for p in (run / "_state/ingest/shards").glob("*/*.json"))
    kept = duckdb.sql(f"SELECT count(*) FROM read_parquet('{run}/kept/*/*.parquet', union_by_name=true)").fetchall()[0][0]
    removed = duckdb.sql(f"SELECT count(*), count(DISTINCT (source, id)) FROM read_parquet('{run}/ledger/*/*/*.parquet')").fetchall()[0]
    assert removed[0] == removed[1], "a document is removed twice"
    assert kept + removed[0] == ingested


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_a_resumed_run_equals_a_fresh_run_and_recomputes_only_what_depends_on_the_change(world, name, monkeypatch, caplog):
    ws, base = world
    shutil.rmtree(ws)
    shutil.copytree(base, ws)
    monkeypatch.chdir(ws)
    mutate, expected, untouched = MUTATIONS[name]
    overrides = mutate(ws)
    before = markers(ws / "run")
    assert run_cli("pipeline.yaml", "--output", "run", "--inline", "-q", "--no-report", *overrides) == 0
    stages, phases = recomputed(before, markers(ws / "run"))
    assert run_cli("pipeline.yaml", "--output", "fresh", "--inline", "-q", "--no-report", *overrides) == 0
    assert outputs(ws / "run") == outputs(ws / "fresh")
    if name in CHANGES_DECISIONS:
        decisions = ("kept", "ledger", "quality", "dual_use", "quarantine", "tokenize", "pack")   # tokenize: token ids per document
        assert tree_digest(ws / "run", decisions) != tree_digest(base / "run", decisions), "the mutation must change a decision"
    assert stages == expected, f"recomputed {sorted(stages)}"
    for phase in untouched:
        assert not any(p.startswith(phase + "/") for p in phases), phase
    for stage, sources in NARROW.get(name, {}).items():
        assert {p.split("/")[2] for p in phases if p.split("/")[0] == stage} <= sources, stage
    accounting_holds(ws / "run")


def _restore(ws: Path, base: Path, monkeypatch) -> None:
    shutil.rmtree(ws)
    shutil.copytree(base, ws)
    monkeypatch.chdir(ws)


def _snapshot(root: Path) -> dict:
    return {str(p.relative_to(root)): (p.stat().st_mtime_ns, p.stat().st_size) for p in root.rglob("*") if p.is_file()}


def test_a_refused_run_changes_nothing_in_the_run_directory(world, monkeypatch, capsys):
    ws, base = world
    _restore(ws, base, monkeypatch)
    from curate.cli import main

    before = _snapshot(ws / "run")
    bad = ["--set", "sources.zyda.paths=corpus/zyda/nothing-*.parquet"]
    assert run_cli("pipeline.yaml", "--output", "run", "--inline", "-q", *bad) == 2
    assert "no files match" in capsys.readouterr().err
    assert run_cli("pipeline.yaml", "--output", "run", "--inline", "-q", "--set", "stages.tokenize.tokenizer=/no/such/tokenizer.json") != 0
    typo = ["--set", "stages.quality_filter.where.fwe=int_scor >= 3", "--set", "stages.dual_use.enabled=false"]
    assert run_cli("pipeline.yaml", "--output", "run", "--inline", "-q", *typo) == 2
    assert "int_scor" in capsys.readouterr().err
    assert _snapshot(ws / "run") == before
    assert main(["manifest", "verify", "run"]) == 0


def test_until_drops_the_later_results_that_no_longer_hold_then_a_full_run_equals_a_fresh_one(world, monkeypatch):
    ws, base = world
    _restore(ws, base, monkeypatch)
    change = ["--set", "stages.quality_filter.where.fwe=int_score >= 4"]
    assert run_cli("pipeline.yaml", "--output", "run", "--inline", "-q", "--no-report", "--until", "quality", *change) == 0
    assert not list((ws / "run/kept").rglob("*.parquet")) and not (ws / "run/manifest.json").exists(), "kept/ and the manifest no longer hold"
    assert not list((ws / "run/dual_use").glob("fwe/*")), "dual_use results of fwe no longer hold"
    assert list((ws / "run/dual_use").glob("zyda/*")), "the other sources' dual_use results still hold"
    before = markers(ws / "run")
    assert run_cli("pipeline.yaml", "--output", "run", "--inline", "-q", "--no-report", *change) == 0
    stages, _ = recomputed(before, markers(ws / "run"))
    assert "quality" not in stages and "dual_use" in stages
    assert run_cli("pipeline.yaml", "--output", "fresh", "--inline", "-q", "--no-report", *change) == 0
    assert outputs(ws / "run") == outputs(ws / "fresh")


def test_kill_9_while_recomputing_after_a_model_change_then_a_rerun_equals_a_fresh_run(world, monkeypatch):
    ws, base = world
    _restore(ws, base, monkeypatch)
    _replace(ws, "q.bin", "models/q.bin")
    key = ws / "run/_state/quality/model-q.key.json"
    old = key.read_bytes()
    cmd = [sys.executable, "-m", "curate", "run", "pipeline.yaml", "--output", "run", "--inline", "-q", "--no-report"]
    kill_9_when(cmd, lambda: key.exists() and key.read_bytes() != old, 120, cwd=ws)
    assert not (ws / "run/summary.json").exists() or (ws / "run/summary.json").stat().st_mtime_ns == (base / "run/summary.json").stat().st_mtime_ns
    assert run_cli("pipeline.yaml", "--output", "run", "--inline", "-q", "--no-report") == 0
    assert run_cli("pipeline.yaml", "--output", "fresh", "--inline", "-q", "--no-report") == 0
    assert outputs(ws / "run") == outputs(ws / "fresh")
    accounting_holds(ws / "run")
