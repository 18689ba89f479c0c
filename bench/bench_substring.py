"""Substring dedup: throughput per core, peak memory, bytes shuffled, text cut per source and the most repeated spans,
on the scaled sample corpus and on real web pages (../shared/data, when present), and agreement with an exact suffix
array (tests/substring/reference.py) on the real pages.

    python bench/bench_substring.py --docs 20000      # sample size; real pages always when present

Each corpus runs as `ingest` + `substring_dedup` in a child process, inline and serial (one core), so the task
seconds are single-core seconds and the child's peak RSS bounds the peak of any one task (plus the interpreter).
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
SHARED = next((p for p in (ROOT.parent / "shared" / "data", Path("/work/shared/data")) if p.exists()), None)
ZYDA_SOURCES = """priority: [fwe, dclm, zyda, dolma_cc]
sources:
  fwe: {format: fineweb, paths: 'SAMPLE/fwe/data/*/*.parquet'}
  dclm: {format: dclm, paths: 'SAMPLE/dclm/global-shard_*/local-shard_*/*.jsonl.zst'}
  zyda: {format: zyda, paths: 'SAMPLE/zyda/data/*/*.parquet'}
  dolma_cc: {format: dolma, paths: 'SAMPLE/dolma_cc/data/*/*.json.gz'}
"""


def real_sources(out: Path) -> dict[str, list[str]]:
    """Real pages by origin: Dolma's CC WET sample, HPLT's warc2text pages, C4 (OLMo fixtures), RedPajama-V1 extracts."""
    import zstandard

    found: dict[str, list[str]] = {}
    for p in sorted((SHARED / "dolma" / "formats").glob("*.jsonl.gz")):
        with gzip.open(p, "rt", encoding="utf-8") as f:
            found.setdefault("dolma_cc", []).extend(json.loads(line)["text"] for line in f)
    for p in sorted((SHARED / "hplt-warc2text-sample100").rglob("*.zst")):
        with open(p, "rb") as raw:
            text = io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(raw), encoding="utf-8", errors="replace")
            for line in text:
                try:
                    t = json.loads(line).get("t")
                except ValueError:
                    continue
                if t:
                    found.setdefault("hplt", []).append(t)
    for p in sorted((SHARED / "olmo_test_fixtures").rglob("*c4*.json.gz")):
        with gzip.open(p, "rt", encoding="utf-8") as f:
            found.setdefault("c4", []).extend(json.loads(line)["text"] for line in f)
    for p in sorted((SHARED / "data-juicer").rglob("*.jsonl")):
        with open(p, encoding="utf-8") as f:
            found.setdefault("redpajama", []).extend(json.loads(line)["text"] for line in f)
    for source, texts in found.items():
        (out / f"{source}.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    return found


def run(pipeline: Path, output: Path) -> dict:
    started = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    proc = subprocess.run([sys.executable, "-m", "curate", "run", str(pipeline), "--output", str(output), "--inline",
                           "--workers", "1", "-q"], env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(proc.stderr)
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"wall": time.monotonic() - started, "peak_rss_mb": max(rss, before) / 1024, "stdout": proc.stdout}


def measures(output: Path, step: str) -> dict:
    state = output / "_state" / step
    phases = {}
    for phase in ("fingerprint", "shared", "windows", "match", "shards"):
        ms = [json.loads(p.read_text()) for p in (state / phase).rglob("*.json")]
        phases[phase] = {"tasks": len(ms), "seconds": sum(m.get("seconds", 0) for m in ms),
                         **{k: sum(m.get(k, 0) for m in ms) for k in ("bytes", "words", "fingerprints", "windows", "bytes_shuffled",
                                                                       "chars", "chars_cut", "chars_removed", "in", "edited")}}
    return phases


def report(name: str, output: Path, step: str, result: dict) -> list[str]:
    ph = measures(output, step)
    mb = ph["fingerprint"]["bytes"] / 1e6
    seconds = sum(p["seconds"] for p in ph.values())
    shuffled = ph["fingerprint"]["bytes_shuffled"] + ph["windows"]["bytes_shuffled"]
    lines = [f"### {name}", "",
             f"- text: {mb:,.1f} MB, {ph['fingerprint']['in']:,} documents, {ph['fingerprint']['words']:,} words",
             "- task seconds (one core): " + ", ".join(f"{k} {v['seconds']:.1f}" for k, v in ph.items()) + f"; total {seconds:.1f}",
             f"- throughput: {mb / seconds:.2f} MB/s per core (all phases), wall {result['wall']:.0f} s with start-up",
             f"- shuffled: fingerprints {ph['fingerprint']['bytes_shuffled'] / 1e6:.1f} MB + windows {ph['windows']['bytes_shuffled'] / 1e6:.1f} MB"
             f" = {shuffled / 1e6:.1f} MB ({shuffled / max(1, ph['fingerprint']['bytes']):.1%} of the text); windows phase ran on "
             f"{ph['windows']['tasks']} of {ph['fingerprint']['tasks']} shards",
             f"- peak RSS of the whole serial run (bounds any task): {result['peak_rss_mb']:.0f} MB", "",
             "| source | documents | edited | removed | characters | cut | % cut |", "|---|---|---|---|---|---|---|"]
    con = duckdb.connect()
    for p in sorted((output / "_state" / step / "shards").iterdir()):
        ms = [json.loads(f.read_text()) for f in p.glob("*.json")]
        c = {k: sum(m.get(k, 0) for m in ms) for k in ("in", "edited", "chars", "chars_cut", "chars_removed")}
        removed = sum(sum(m["removed"].values()) for m in ms)
        cut = c["chars_cut"] + c["chars_removed"]
        lines.append(f"| {p.name} | {c['in']:,} | {c['edited']:,} | {removed:,} | {c['chars']:,} | {cut:,} | {cut / max(1, c['chars']):.1%} |")
    top = sorted((output / step / "repeats").rglob("*.parquet"))
    if top:
        rows = con.sql(f"SELECT copies, words, replace(left(text, 90), '\n', ' ') FROM read_parquet({[str(t) for t in top]}) "
                       "ORDER BY copies DESC, words DESC LIMIT 8").fetchall()
        lines += ["", "| copies | words | most repeated spans (start) |", "|---|---|---|"]
        lines += [f"| {c} | {w} | `{t.replace('|', '/').replace('`', '')}` |" for c, w, t in rows]
    return lines + [""]


def agreement(sources: list[str], output: Path, step: str, length: int) -> list[str]:
    """The words cut against the suffix array's, on the documents as the run holds them (RUN/docs/, in priority order:
    source, shard, row): bytes of the words the keep-the-first policy cuts, both ways."""
    import pyarrow.parquet as pq

    from substring.reference import cut_words, expected_cuts, split_words

    docs, ids = [], []
    for source in sources:
        for shard in sorted((output / "docs" / source).glob("*.parquet")):
            t = pq.read_table(shard, columns=["id", "text"])
            docs += [x or "" for x in t["text"].to_pylist()]
            ids += [(source, i) for i in t["id"].to_pylist()]
    con = duckdb.connect()
    spans: dict = {}
    for s, i, a, b in con.sql(f"SELECT source, id, start, \"end\" FROM read_parquet('{output}/edits/{step}/*/*.parquet')").fetchall():
        spans.setdefault((s, i), []).append((a, b))
    started = time.monotonic()
    expect = expected_cuts(docs, list(range(len(docs))), length)
    sa_seconds = time.monotonic() - started
    want = got = both = 0
    for d, key in enumerate(ids):
        words = split_words(docs[d])
        found, exp = cut_words(docs[d], spans.get(key, [])), expect.get(d, set())
        size = lambda ws, words=words: sum(len(words[w][2].encode()) for w in ws)  # noqa: E731
        want, got, both = want + size(exp), got + size(found), both + size(exp & found)
    return [f"| {len(docs):,} docs | {want:,} | {got:,} | {both / max(1, want):.2%} | {got - both:,} | {sa_seconds:.0f} s |"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=20000, help="documents in the scaled sample")
    ap.add_argument("--min-words", type=int, default=50)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-substring-"))
    step = "substring_dedup"
    stage = f"  {step}: {{min_words: {args.min_words}, min_words_left: 20}}\n"
    lines = [f"## Substring dedup (bench/bench_substring.py, min_words {args.min_words}, {os.cpu_count()} cores shared)", ""]
    if SHARED is not None:
        real = real_sources(tmp)
        srcs = "".join(f"  {s}: {{format: jsonl, paths: '{tmp}/{s}.jsonl'}}\n" for s in real)
        p = tmp / "real.yaml"
        p.write_text(f"name: real\npriority: {list(real)}\nsources:\n{srcs}stages:\n  ingest: {{}}\n"
                     + stage.replace("min_words_left: 20", "min_words_left: 0"))   # every cut an edit, to compare
        result = run(p, tmp / "real")
        lines += report("real pages (" + ", ".join(f"{s} {len(t)}" for s, t in real.items()) + ")", tmp / "real", step, result)
        lines += ["Agreement with an exact suffix array (same words, same keep-the-first policy), real pages:", "",
                  "| corpus | suffix-array cut bytes | found bytes | SA bytes found | found, not in SA | SA time |", "|---|---|---|---|---|---|"]
        lines += agreement(list(real), tmp / "real", step, args.min_words) + [""]
    from curate.sample import make_sample

    started = time.monotonic()
    make_sample(tmp / "sample", docs=args.docs, seed=0)
    made = time.monotonic() - started
    p = tmp / "sample.yaml"
    p.write_text("name: sample\n" + ZYDA_SOURCES.replace("SAMPLE", str(tmp / "sample")) + "stages:\n  ingest: {}\n" + stage)
    result = run(p, tmp / "sample_run")
    lines += report(f"scaled sample, {args.docs:,} documents (made in {made:.0f} s)", tmp / "sample_run", step, result)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
