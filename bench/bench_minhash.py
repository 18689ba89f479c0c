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

    tmp = Path(tempfile.mkdtemp(prefix="bench-minhash-"))
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
    return texts, f"curate sample corpus ({docs} docs requested, made in {tmp})"


# -------------------------------------------------------------------------------------------------
# Timing helpers
# -------------------------------------------------------------------------------------------------

def best_of(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def run_ours(texts: pa.Array, spec, threads: int, repeat: int):
    mh = MinHasher(spec, threads=threads)
    mh(texts.slice(0, min(len(texts), 8)))  # compile or load the numba cache
    t_sig, sigs = best_of(lambda: mh(texts), repeat)
    t_keys, keys = best_of(lambda: band_keys(sigs, spec.bands, spec.rows), repeat)
    return t_sig, t_keys, sigs, keys


def datasketch_shingles(text: str, n: int = 25) -> list[bytes]:
    if len(text) >= n:
        return [text[i:i + n].encode("utf-8") for i in range(len(text) - n + 1)]
    return [text.encode("utf-8")] if text else []


def run_datasketch(texts: list[str], scheme: str | None, seed: int = 1):
    from datasketch import MinHash, MinHashLSH

    kw = {} if scheme is None else {"scheme": scheme}
    t = time.perf_counter()
    mhs = []
    for text in texts:
        m = MinHash(num_perm=128, seed=seed, **kw)
        m.update_batch(datasketch_shingles(text))
        mhs.append(m)
    t_mh = time.perf_counter() - t
    lsh = MinHashLSH(num_perm=128, params=(8, 16))
    t = time.perf_counter()
    for i, m in enumerate(mhs):
        lsh.insert(i, m)
    t_ins = time.perf_counter() - t
    t = time.perf_counter()
    results = [lsh.query(m) for m in mhs]
    t_q = time.perf_counter() - t
    return t_mh, t_ins, t_q, mhs, results


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

    rows = []

    def report(label, seconds, extra=""):
        rows.append((label, seconds))
        print(f"  {label:<58} {seconds:8.3f} s  {n / seconds:10,.0f} docs/s {extra}")

    print("ours (signatures + band keys):")
    ours = {}
    for label, spec in [("zyda2 (poly64 hash, legacy perms)", zyda2),
                        ("zyda2, murmur3 hash", zyda2.replace(hash="murmur3")),
                        ("zyda2, affine32 perms (datasketch 2.x scheme)", zyda2.replace(scheme="affine32")),
                        ("zyda2, datasketch-compatible (sha1, affine32)",
                         zyda2.replace(scheme="affine32").datasketch_compatible())]:
        for threads in (1, 2):
            t_sig, t_keys, sigs, keys = run_ours(arr, spec, threads, args.repeat)
            ours[(label, threads)] = t_sig + t_keys
            report(f"{label}, {threads} thread{'s' if threads > 1 else ''}", t_sig + t_keys,
                   f"(keys {t_keys * 1000:.1f} ms)")

    print("datasketch MinHash(num_perm=128) + MinHashLSH(num_perm=128, params=(8, 16)) insert + query:")
    ds = {}
    for label, scheme in [("default scheme (affine32)", None), ("scheme='legacy'", "legacy")]:
        t_mh, t_ins, t_q, mhs, results = run_datasketch(texts, scheme)
        ds[label] = (t_mh + t_ins + t_q, mhs, results)
        report(f"{label}", t_mh + t_ins + t_q,
               f"(minhash {t_mh:.2f} s, insert {t_ins:.2f} s, query {t_q:.2f} s)")

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
    base_default = ds["default scheme (affine32)"][0]
    base_legacy = ds["scheme='legacy'"][0]
    z = "zyda2 (poly64 hash, legacy perms)"
    for threads in (1, 2):
        t = ours[(z, threads)]
        print(f"ratio, zyda2 preset, {threads} thread(s): {base_default / t:5.1f}x datasketch default scheme, "
              f"{base_legacy / t:5.1f}x datasketch legacy scheme")
    for threads in (1, 2):
        t = ours[("zyda2, affine32 perms (datasketch 2.x scheme)", threads)]
        print(f"ratio, same scheme as datasketch's default (affine32), {threads} thread(s): "
              f"{base_default / t:5.1f}x")
    for threads in (1, 2):
        t = ours[("zyda2, datasketch-compatible (sha1, affine32)", threads)]
        print(f"ratio, datasketch-compatible mode (identical signatures), {threads} thread(s): "
              f"{base_default / t:5.1f}x")

    if not args.skip_datatrove:
        print()
        bench_fineweb(texts, arr, args.repeat)
    return 0


def bench_fineweb(texts: list[str], arr: pa.Array, repeat: int) -> None:
    spec = get_preset("fineweb")
    for threads in (1, 2):
        t_sig, t_keys, _, _ = run_ours(arr, spec, threads, max(1, repeat // 2))
        print(f"ours fineweb preset (word 5-grams, 14 x 8), {threads} thread(s): "
              f"{len(texts) / (t_sig + t_keys):,.0f} docs/s")
    try:
        from datatrove.data import Document
        from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupSignature
    except Exception as err:  # datatrove's text utilities import `regex`; its tokenizer needs spaCy
        print(f"datatrove MinhashDedupSignature: skipped ({type(err).__name__}: {err})")
        return
    with tempfile.TemporaryDirectory() as out:
        try:
            stage = MinhashDedupSignature(output_folder=out, config=MinhashConfig())
            docs = [Document(text=t, id=str(i)) for i, t in enumerate(texts)]
            t = time.perf_counter()
            for _ in stage.run(iter(docs), rank=0, world_size=1):
                pass
            dt = time.perf_counter() - t
            print(f"datatrove MinhashDedupSignature (1 process): {len(texts) / dt:,.0f} docs/s")
        except Exception as err:
            print(f"datatrove MinhashDedupSignature: skipped ({type(err).__name__}: {err})")


if __name__ == "__main__":
    raise SystemExit(main())
