"""Substring dedup: throughput per core, peak memory, bytes shuffled, text cut per source and the most repeated spans,
on the scaled sample corpus and on real web pages (../shared/data, when present), and agreement with an exact suffix
array (tests/substring/reference.py) on the real pages.

    python bench/bench_substring.py --docs 20000      # sample size; real pages always when present
    python bench/bench_substring.py --docs 1000000 --sample /tmp/s1m --workers 2 --no-real

Each corpus runs as `ingest` + `substring_dedup` in a child process, inline and serial (one core), so the task
seconds are single-core seconds and the child's peak RSS bounds the peak of any one task (plus the interpreter).
With `--workers N` the sample's ingest runs inline first, then substring_dedup alone on N Ray workers, whose
resident memory is sampled from /proc every 0.2 s: a worker runs one task at a time, so its peak is the peak of
one task (plus the worker's own ~150 MB, shown as the idle worker's RSS). Every bench also checks the text of a
sample of the cuts against their kept copies, word for word (the windows are matched by 128-bit hash).
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
import random
import tempfile
import threading
import time
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
MIN_WORDS = 50
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


def run(pipeline: Path, output: Path, workers: int = 0) -> dict:
    """Serial inline (workers 0), or ingest inline then the rest on `workers` Ray workers with their RSS sampled."""
    cmd = [sys.executable, "-m", "curate", "run", str(pipeline), "--output", str(output), "-q", "--no-report"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if workers:
        subprocess.run([*cmd, "--inline", "--until", "ingest"], env=env, check=True)
    started = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    proc = subprocess.Popen([*cmd, "--workers", str(workers)] if workers else [*cmd, "--inline", "--workers", "1"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sampler = RssSampler(proc.pid) if workers else None
    out, err = proc.communicate()
    if sampler:
        sampler.stop()
    if proc.returncode:
        raise SystemExit(err)
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"wall": time.monotonic() - started, "peak_rss_mb": max(rss, before) / 1024, "stdout": out,
            "workers": sampler.peaks() if sampler else None}


def _status(pid: int) -> dict[str, str]:
    return dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)


class RssSampler:
    """The peak resident memory of every Ray worker process (`ray::` in its title) below process `root`, from /proc."""

    def __init__(self, root: int, every: float = 0.2):
        self.root = root
        self.peak: dict[int, int] = {}
        self.idle: dict[int, int] = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, args=(every,), daemon=True)
        self.thread.start()

    def _loop(self, every: float) -> None:
        while not self.done.wait(every):
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    title = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
                    if not title.startswith("ray::") or not self._below(int(pid)):
                        continue
                    kb = int(_status(int(pid))["VmRSS"].split()[0])
                except (OSError, KeyError, ValueError):
                    continue
                self.peak[int(pid)] = max(self.peak.get(int(pid), 0), kb)
                if title.startswith("ray::IDLE"):
                    self.idle[int(pid)] = min(self.idle.get(int(pid), kb), kb)

    def _below(self, pid: int) -> bool:
        while pid > 1:
            pid = int(_status(pid)["PPid"])
            if pid == self.root:
                return True
        return False

    def stop(self) -> None:
        self.done.set()
        self.thread.join()

    def peaks(self) -> dict:
        busy = sorted(self.peak.values(), reverse=True)
        return {"processes": len(busy), "peak_mb": [kb / 1024 for kb in busy[:4]],
                "idle_mb": min(self.idle.values()) / 1024 if self.idle else None}


def measures(output: Path, step: str) -> dict:
    state = output / "_state" / step
    phases = {}
    for phase in ("fingerprint", "shared", "windows", "match", "shards"):
        ms = [json.loads(p.read_text()) for p in (state / phase).rglob("*.json")]
        phases[phase] = {"tasks": len(ms), "seconds": sum(m.get("seconds", 0) for m in ms),
                         "rows_held": max((m.get("rows_held", 0) for m in ms), default=0),
                         "chunks": max((m.get("chunks", 0) for m in ms), default=0),
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
             (f"- peak RSS per Ray worker (one task at a time each; {result['workers']['processes']} worker processes): "
              + ", ".join(f"{m:.0f}" for m in result["workers"]["peak_mb"]) + f" MB (an idle worker: {result['workers']['idle_mb'] or 0:.0f} MB)"
              if result.get("workers") else f"- peak RSS of the whole serial run (bounds any task): {result['peak_rss_mb']:.0f} MB"),
             "- largest partition task: " + ", ".join(f"{k} {ph[k]['rows_held']:,} rows held, {ph[k]['chunks']} chunk(s)"
                                                       for k in ("shared", "match")),
             confirm(output, step), "",
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


def confirm(output: Path, step: str, sample: int = 3000, seed: int = 0) -> str:
    """A text check of the 128-bit window match: for a random sample of cuts, the `min_words` words of the kept copy
    (from `kept_start`) are found, word for word, in the cut document around the cut's first word."""
    import pyarrow.parquet as pq

    con = duckdb.connect()
    edits = con.sql(f"SELECT source, id, start, kept_source, kept_id, kept_start FROM read_parquet('{output}/edits/{step}/*/*.parquet')").fetchall()
    edits = random.Random(seed).sample(edits, min(sample, len(edits)))
    length = MIN_WORDS
    want = {(s, i) for s, i, *_ in edits} | {(ks, ki) for *_, ks, ki, _ in edits}
    texts = {}
    for source in {s for s, _ in want}:
        ids = {i for s, i in want if s == source}
        for shard in sorted((output / "docs" / source).glob("*.parquet")):
            t = pq.read_table(shard, columns=["id", "text"], filters=[("id", "in", list(ids))])
            texts.update({(source, i): x for i, x in zip(t["id"].to_pylist(), t["text"].to_pylist())})
    good = 0
    for source, doc, start, ks, ki, kstart in edits:
        text, kept = texts[(source, doc)], texts[(ks, ki)]
        words = text[start:].split()
        before = text[:start].split()[-(length - 1):] if start else []
        around = before + words[:length]
        window = kept[kstart:].split()[:length]
        good += any(around[o:o + length] == window for o in range(len(before) + 1))
    return f"- text check: {good:,} of {len(edits):,} sampled cuts match their kept copy word for word"


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
    ap.add_argument("--sample", type=Path, help="the scaled sample's folder: made there once, reused after")
    ap.add_argument("--workers", type=int, default=0, help="run the sample's substring_dedup on this many Ray workers")
    ap.add_argument("--no-real", action="store_true", help="skip the real pages")
    args = ap.parse_args()
    global MIN_WORDS
    MIN_WORDS = args.min_words
    tmp = Path(tempfile.mkdtemp(prefix="bench-substring-"))
    step = "substring_dedup"
    stage = f"  {step}: {{min_words: {args.min_words}, min_words_left: 20}}\n"
    lines = [f"## Substring dedup (bench/bench_substring.py, min_words {args.min_words}, {os.cpu_count()} cores shared)", ""]
    if SHARED is not None and not args.no_real:
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
    from curate.sample.corpus import is_complete

    sample = args.sample or tmp / "sample"
    started = time.monotonic()
    if not is_complete(sample):
        make_sample(sample, docs=args.docs, seed=0)
    made = time.monotonic() - started
    p = tmp / "sample.yaml"
    p.write_text("name: sample\n" + ZYDA_SOURCES.replace("SAMPLE", str(sample)) + "stages:\n  ingest: {}\n" + stage)
    result = run(p, tmp / "sample_run", args.workers)
    how = f"{args.workers} Ray workers" if args.workers else "inline, serial"
    lines += report(f"scaled sample, {args.docs:,} documents ({how}; made in {made:.0f} s)", tmp / "sample_run", step, result)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
