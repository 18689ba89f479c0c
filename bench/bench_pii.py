"""Benchmark: PII redaction, curate's pii step against datatrove's `PIIFormatter` (FineWeb-2's), on the same text.

- ours: `curate.pii.find_spans` over Arrow batches of 8,192 documents (RE2 prefilters in pyarrow over the whole
  batch, then the precise patterns and exceptions on candidate documents only, in windows around `@` and dotted
  quads), then `apply_edits` (what every
  later step pays to read the edited text), e-mail + IPv4 + IPv6;
- our precise patterns alone: `finditer` of each on every document (what the prefilter and the anchors save);
- datatrove 0.10: `PIIFormatter().format(text)` per document (e-mail + IPv4; it has no IPv6).

Speeds are MB (UTF-8) per CPU second of this process (pyarrow's kernels run in it), i.e. per core; wall time
is printed beside. Each method runs over the corpus cycled to `--mb` megabytes: ours in whole passes until 2 CPU
seconds, the others one pass stopped after `--budget` CPU seconds. Run twice: on the
corpus as it is (few documents hold an address, like the web), and on its documents that hold one
(`address-dense`: the worst case for the prefilter, every document a candidate).

Corpus: ../shared/data/dolma/formats (697 real Common Crawl pages, 2.5 MB) when present, else the sample
(`curate sample`, which holds no address: then only the first run means anything).

Usage: python bench/bench_pii.py [--mb 40] [--budget 8]
"""

from __future__ import annotations

import argparse
import os
import re
import time

import pyarrow as pa

from curate.pii import build_kinds, find_spans
from curate.rundir.edits import apply_edits, spans_by_id

from inputs import dolma_texts, sample_texts  # noqa: E402  (bench/inputs.py)


def corpus() -> tuple[str, list[str]]:
    texts = dolma_texts()
    if texts:
        return "dolma/formats (Common Crawl WET, 2019)", texts
    return "curate sample (no addresses)", sample_texts(docs=2000)


def cycled(texts: list[str], mb: float) -> list[str]:
    out, size, i = [], 0, 0
    while size < mb * 1e6:
        out.append(texts[i % len(texts)])
        size += len(texts[i % len(texts)].encode())
        i += 1
    return out


def timed(fn, batches: list, budget: float | None, at_least: float = 2.0) -> tuple[float, float, int]:
    """(MB per CPU second, MB per wall second, documents done) of `fn` over `batches` of (size in MB, documents,
    prepared input): with a `budget`, one pass stopping after that many CPU seconds; without, whole passes until
    `at_least` CPU seconds. Preparing the input (Arrow arrays) is not timed."""
    cpu, wall, done, size = time.process_time(), time.perf_counter(), 0, 0.0
    while True:
        for mb, n, prepared in batches:
            fn(prepared)
            done += n
            size += mb
            if budget is not None and time.process_time() - cpu > budget:
                break
        if budget is not None or time.process_time() - cpu >= at_least:
            break
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return size / cpu, size / wall, done


def batched(texts: list[str], arrow: bool, rows: int = 8192) -> list:
    """(MB, documents, input) per batch: the stage gets Arrow batches of `execution.batch_rows` (8,192) with ids."""
    out = []
    for start in range(0, len(texts), rows):
        part = texts[start:start + rows]
        mb = sum(len(t.encode()) for t in part) / 1e6
        out.append((mb, len(part), pa.table({"id": [str(i) for i in range(len(part))], "text": pa.array(part, pa.large_string())})
                    if arrow else part))
    return out


def ours(kinds):
    def run(table):
        spans = find_spans(table.column("text"), kinds)
        ids = table.column("id").combine_chunks()
        apply_edits(table, spans_by_id(spans.append_column("id", ids.take(spans.column("row")))))
    return run


def no_prefilter(kinds):
    def run(texts):
        for text in texts:
            for k in kinds:
                for m in k.pattern.finditer(text):
                    k.accept(text, m)
    return run


def datatrove():
    from datatrove.pipeline.formatters import PIIFormatter

    formatter = PIIFormatter()

    def run(texts):
        for text in texts:
            formatter.format(text)
    return run


def agreement(texts: list[str], kinds) -> str:
    """How many documents each method changes, and on how many they agree about changing."""
    from datatrove.pipeline.formatters import PIIFormatter

    dt = {i for i, t in enumerate(texts) if PIIFormatter().format(t) != t}
    spans = find_spans(pa.array(texts), kinds)
    mine = set(spans.column("row").to_pylist())
    kinds_count = {}
    for k in spans.column("kind").to_pylist():
        kinds_count[k] = kinds_count.get(k, 0) + 1
    return (f"documents changed: ours {len(mine)} (spans {kinds_count}), datatrove {len(dt)}, both {len(mine & dt)}; "
            f"only datatrove: {sorted(dt - mine)[:8]}, only ours: {sorted(mine - dt)[:8]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=40)
    ap.add_argument("--budget", type=float, default=8)
    args = ap.parse_args()
    name, texts = corpus()
    kinds = build_kinds(["email", "ipv4", "ipv6"], {}, {}, True, [])
    print(f"corpus: {name}: {len(texts)} documents, {sum(len(t.encode()) for t in texts) / 1e6:.2f} MB; "
          f"load average {os.getloadavg()[0]:.1f} / {os.getloadavg()[1]:.1f} (1 / 5 min), {os.cpu_count()} CPUs")
    print(agreement(texts, kinds))
    dense = [t for t in texts if re.search(r"@|\d\.\d+\.\d+\.\d|::|:[0-9a-fA-F]{1,4}:", t)]
    for label, docs in (("as is", texts), (f"address-dense ({len(dense)} candidate documents)", dense)):
        if not docs:
            continue
        work = cycled(docs, args.mb)
        arrow, plain = batched(work, True), batched(work, False)
        rows = [("ours (prefilter + precise, + apply)", *timed(ours(kinds), arrow, None)),
                ("our precise patterns alone, every document", *timed(no_prefilter(kinds), plain, args.budget)),
                ("datatrove PIIFormatter", *timed(datatrove(), plain, args.budget))]
        print(f"\n{label}: {args.mb:g} MB cycled")
        print("| method | MB/s per core (CPU) | MB/s wall | documents timed |\n|---|---:|---:|---:|")
        for method, cpu, wall, done in rows:
            print(f"| {method} | {cpu:.1f} | {wall:.1f} | {done:,} |")
        print(f"ours / datatrove: {rows[0][1] / rows[2][1]:.1f}x per core")


if __name__ == "__main__":
    main()
