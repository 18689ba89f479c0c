"""Benchmark: curate's MinHash signatures + band keys against datasketch on the same documents.

    python bench/bench_minhash.py                  # Dolma CC sample if ../shared/data has it, else our sample
    python bench/bench_minhash.py --source sample --docs 4000

Measured, in one run, on the same documents:
- ours, zyda2 preset (character 25-grams of the raw text, 128 permutations, 8 x 16 bands): signatures +
  band keys, with 1 thread and with 2 threads (the kernel releases the GIL), best of --repeat runs after
  a warm-up call (numba compiles, or loads its cache, on the first call);
- the same with datasketch 2.x's default permutation scheme (affine32) and in datasketch-compatible mode
  (sha1_hash32 shingle hash);
- datasketch: ``MinHash(num_perm=128)`` fed the same shingles (``update_batch``), then
  ``MinHashLSH(num_perm=128, params=(8, 16))`` insert + query of every document; with the default scheme
  (affine32) and with ``scheme="legacy"`` (the scheme of our zyda2 preset);
- a check: in datasketch-compatible mode (sha1, affine32, seed 1) our signatures must equal datasketch's
  for every document, and the candidate pairs from our band keys must equal MinHashLSH's query results;
- optional: our fineweb preset, and datatrove's MinhashDedupSignature when datatrove's tokenizer stack
  (``regex``, spaCy) is installed.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate.dedup import MinHasher, band_keys, format_s_curve, get_preset  # noqa: E402

DOLMA_GLOB = str(ROOT.parent / "shared" / "data" / "dolma" / "formats" / "*.jsonl.gz")


# -------------------------------------------------------------------------------------------------
# Documents
# -------------------------------------------------------------------------------------------------

def _json_lines(lines) -> list[str]:
    out = []
    for line in lines:
        try:
            text = json.loads(line).get("text")
        except (ValueError, AttributeError):
            continue  # the sample plants bad records on purpose
        if isinstance(text, str):
            out.append(text)
    return out


def _gzip_lines(path: str):
    """Lines of a gzip file, stopping quietly at a truncated end (the sample plants one)."""
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as fh:
        try:
            yield from fh
        except (EOFError, OSError):
            return


def load_documents(source: str, docs: int) -> tuple[list[str], str]:
    files = sorted(glob.glob(DOLMA_GLOB))
    if source == "dolma" or (source == "auto" and files):
        if not files:
            raise SystemExit(f"no files match {DOLMA_GLOB}")
        texts = []
        for f in files:
            texts += _json_lines(_gzip_lines(f))
        return texts, f"Dolma CC sample ({', '.join(os.path.basename(f) for f in files)})"
    from curate.sample import make_sample

    with tempfile.TemporaryDirectory(prefix="bench-minhash-") as d:
        tmp = Path(d)
        make_sample(tmp, docs=docs)
        texts = []
        for f in sorted(glob.glob(str(tmp / "**" / "*.parquet"), recursive=True)):
            table = pq.read_table(f)
            if "text" in table.column_names:
                texts += [t for t in table.column("text").to_pylist() if isinstance(t, str)]
        for f in sorted(glob.glob(str(tmp / "**" / "*.json.gz"), recursive=True)):
            texts += _json_lines(_gzip_lines(f))
        try:
            import zstandard

            for f in sorted(glob.glob(str(tmp / "**" / "*.jsonl.zst"), recursive=True)):
                with open(f, "rb") as fh:
                    raw = zstandard.ZstdDecompressor().stream_reader(fh).read()
                texts += _json_lines(raw.decode("utf-8", errors="replace").splitlines())
        except ImportError:
            pass
    return texts, f"curate sample corpus (make_sample docs={docs}: FineWeb-Edu, DCLM, Zyda, Dolma-CC)"


# -------------------------------------------------------------------------------------------------
# Timing helpers
# -------------------------------------------------------------------------------------------------

class Clock:
    """Wall time and this process's CPU time. On a shared machine the CPU time of a single-threaded run
    is the steadier number (it does not count time spent descheduled); threads need wall time."""

    def __enter__(self):
        self.w, self.c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.w, time.process_time() - self.c


def best_of(fn, repeat: int):
    wall, cpu, out = float("inf"), float("inf"), None
    for _ in range(repeat):
        with Clock() as c:
            out = fn()
        wall, cpu = min(wall, c.wall), min(cpu, c.cpu)
    return wall, cpu, out


def run_ours(texts: pa.Array, spec, threads: int, repeat: int):
    """(wall, cpu) seconds for signatures + band keys (best of ``repeat``), and the last results."""
    mh = MinHasher(spec, threads=threads)
    mh(texts.slice(0, min(len(texts), 8)))  # compile or load the numba cache

    def both():
        sigs = mh(texts)
        return sigs, band_keys(sigs, spec.bands, spec.rows)

    wall, cpu, (sigs, keys) = best_of(both, repeat)
    return wall, cpu, sigs, keys


def datasketch_shingles(text: str, n: int = 25) -> list[bytes]:
    if len(text) >= n:
        return [text[i:i + n].encode("utf-8") for i in range(len(text) - n + 1)]
    return [text.encode("utf-8")] if text else []


def run_datasketch(texts: list[str], scheme: str | None, seed: int = 1):
    from datasketch import MinHash, MinHashLSH

    kw = {} if scheme is None else {"scheme": scheme}
    with Clock() as c_mh:
        mhs = []
        for text in texts:
            m = MinHash(num_perm=128, seed=seed, **kw)
            m.update_batch(datasketch_shingles(text))
            mhs.append(m)
    lsh = MinHashLSH(num_perm=128, params=(8, 16))
    with Clock() as c_ins:
        for i, m in enumerate(mhs):
            lsh.insert(i, m)
    with Clock() as c_q:
        results = [lsh.query(m) for m in mhs]
    clocks = (c_mh, c_ins, c_q)
    return clocks, mhs, results


def candidate_pairs_from_keys(keys: np.ndarray, valid: np.ndarray) -> set[tuple[int, int]]:
    buckets = defaultdict(list)
    for doc in np.flatnonzero(valid):
        for band in range(keys.shape[1]):
            buckets[(band, int(keys[doc, band]))].append(int(doc))
    pairs = set()
    for members in buckets.values():
        for i in range(len(members)):
            for j in range(i + 1, len(members)):
                pairs.add((members[i], members[j]))
    return pairs


def candidate_pairs_from_lsh(results) -> set[tuple[int, int]]:
    return {(min(i, j), max(i, j)) for i, res in enumerate(results) for j in res if j != i}


# -------------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", choices=["auto", "dolma", "sample"], default="auto")
    ap.add_argument("--docs", type=int, default=4000, help="documents in the generated sample (--source sample)")
    ap.add_argument("--limit", type=int, default=0, help="use at most this many documents (0: all)")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs of ours (best is reported)")
    ap.add_argument("--skip-datatrove", action="store_true")
    args = ap.parse_args(argv)

    texts, origin = load_documents(args.source, args.docs)
    if args.limit:
        texts = texts[:args.limit]
    arr = pa.array(texts, type=pa.large_string())
    n = len(texts)
    chars = sum(len(t) for t in texts)
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"documents: {n} from {origin}")
    print(f"  {mb:.2f} MB UTF-8, mean {chars / max(n, 1):,.0f} code points/doc; "
          f"{os.cpu_count()} CPUs, load average {load:.2f}")
    zyda2 = get_preset("zyda2")
    print(format_s_curve(zyda2.bands, zyda2.rows, num_perm=zyda2.num_perm))
    print()

    def report(label, wall, cpu, extra=""):
        print(f"  {label:<56} {wall:7.3f} s {n / wall:9,.0f} docs/s | cpu {cpu:7.3f} s {n / cpu:9,.0f} docs/s {extra}")

    print("ours (signatures + band keys), best of", args.repeat, "(wall | process CPU time):")
    ours = {}
    for label, spec in [("zyda2 (poly64 hash, legacy perms)", zyda2),
                        ("zyda2, murmur3 hash", zyda2.replace(hash="murmur3")),
                        ("zyda2, affine32 perms (datasketch 2.x scheme)", zyda2.replace(scheme="affine32")),
                        ("zyda2, datasketch-compatible (sha1, affine32)",
                         zyda2.replace(scheme="affine32").datasketch_compatible())]:
        for threads in (1, 2):
            wall, cpu, _, _ = run_ours(arr, spec, threads, args.repeat)
            ours[(label, threads)] = (wall, cpu)
            report(f"{label}, {threads} thread{'s' if threads > 1 else ''}", wall, cpu)

    print("datasketch MinHash(num_perm=128) + MinHashLSH(num_perm=128, params=(8, 16)) insert + query:")
    ds = {}
    for label, scheme in [("default scheme (affine32)", None), ("scheme='legacy'", "legacy")]:
        (c_mh, c_ins, c_q), mhs, results = run_datasketch(texts, scheme)
        wall, cpu = c_mh.wall + c_ins.wall + c_q.wall, c_mh.cpu + c_ins.cpu + c_q.cpu
        ds[label] = ((wall, cpu), mhs, results)
        report(label, wall, cpu, f"(minhash {c_mh.wall:.2f} s, insert {c_ins.wall:.2f} s, query {c_q.wall:.2f} s)")

    # exactness check: datasketch-compatible mode == datasketch, band-key candidates == LSH candidates
    compat = zyda2.replace(scheme="affine32", seed=1).datasketch_compatible()
    sigs = MinHasher(compat)(arr)
    _, mhs, results = ds["default scheme (affine32)"]
    same = all(np.array_equal(sigs.values[i], np.asarray(m.hashvalues, dtype=np.uint32)) for i, m in enumerate(mhs))
    ours_pairs = candidate_pairs_from_keys(band_keys(sigs, 8, 16), np.ones(n, dtype=bool))
    lsh_pairs = candidate_pairs_from_lsh(results)
    print(f"check: datasketch-compatible signatures equal datasketch's for all {n} docs: {same}; "
          f"candidate pairs {len(ours_pairs)} (ours) vs {len(lsh_pairs)} (MinHashLSH), equal: {ours_pairs == lsh_pairs}")

    print()
    (dw, dc), (lw, lc) = ds["default scheme (affine32)"][0], ds["scheme='legacy'"][0]
    for label, short in [("zyda2 (poly64 hash, legacy perms)", "zyda2 preset"),
                         ("zyda2, affine32 perms (datasketch 2.x scheme)", "zyda2 with affine32 perms"),
                         ("zyda2, datasketch-compatible (sha1, affine32)", "datasketch-compatible mode")]:
        (w1, c1), (w2, _) = ours[(label, 1)], ours[(label, 2)]
        print(f"ratio, {short}: vs datasketch default scheme: 1 thread {dw / w1:5.1f}x wall, {dc / c1:5.1f}x cpu; "
              f"2 threads {dw / w2:5.1f}x wall  |  vs datasketch legacy: {lw / w1:5.1f}x, {lc / c1:5.1f}x, "
              f"{lw / w2:5.1f}x")

    if not args.skip_datatrove:
        print()
        bench_fineweb(texts, arr, args.repeat)
    return 0


def bench_fineweb(texts: list[str], arr: pa.Array, repeat: int) -> None:
    spec = get_preset("fineweb")
    for threads in (1, 2):
        wall, cpu, _, _ = run_ours(arr, spec, threads, max(1, repeat // 2))
        print(f"ours fineweb preset (word 5-grams, 14 x 8), {threads} thread(s): "
              f"{len(texts) / wall:,.0f} docs/s wall, {len(texts) / cpu:,.0f} docs/s cpu")
    try:
        from datatrove.data import Document
        from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupSignature
        from datatrove.utils.hashing import HashConfig
        from datatrove.utils.word_tokenizers import WordTokenizer
    except Exception as err:  # datatrove's text utilities import the third-party `regex` package
        print(f"datatrove MinhashDedupSignature: skipped ({type(err).__name__}: {err})")
        return

    class SplitTokenizer(WordTokenizer):
        """Whitespace words, as our fineweb preset uses (datatrove's English default is spaCy, which
        DESIGN.md measured at 90% of that stage's time)."""

        def word_tokenize(self, text):
            return text.split()

        def sent_tokenize(self, text):
            return [text]

        def span_tokenize(self, text):
            return [(0, len(text))]

    with tempfile.TemporaryDirectory() as out:
        try:
            # datatrove's default xxhash config passes str to xxhash, which xxhash 4 rejects: use its sha1 one
            config = MinhashConfig(hash_config=HashConfig(precision=64, hash_fc="sha1"))
            stage = MinhashDedupSignature(output_folder=out, config=config, language=SplitTokenizer())
            docs = [Document(text=t, id=str(i)) for i, t in enumerate(texts)]
            with Clock() as c:
                res = stage.run(iter(docs), rank=0, world_size=1)
                if res is not None:
                    for _ in res:
                        pass
            print(f"datatrove MinhashDedupSignature (whitespace words, sha1/64-bit, 1 process): {len(texts) / c.wall:,.0f} "
                  f"docs/s wall, {len(texts) / c.cpu:,.0f} docs/s cpu (includes writing its sorted bucket files)")
        except Exception as err:
            print(f"datatrove MinhashDedupSignature: skipped ({type(err).__name__}: {err})")


if __name__ == "__main__":
    raise SystemExit(main())
