"""The whole zyda2 job in curate against the same job built from datatrove 0.10's own blocks, in one run.

Same corpus (the offline sample in the four native formats), same cores (2 workers each):

- curate: `curate run pipelines/zyda2.yaml` (ingest, minhash + cross-source dedup, signals, the int_score
  filter, the quality classifier's fastText stand-in on zyda and dolma_cc, mix, tokenize, pack, manifest,
  report), one process on the embedded Ray cluster;
- datatrove: its readers (ParquetReader for fwe and zyda, JsonlReader for dclm's .jsonl.zst and dolma's
  .json.gz), its four-stage MinHash dedup (defaults), a LambdaFilter `int_score >= 3` on fwe, its
  FastTextClassifierFilter (the same stand-in model, `High` kept) on zyda and dolma_cc, and its
  DocumentTokenizer with the same GPT-2 tokenizer (written to a local tokenizer.json: no download).

Printed: wall, CPU time, documents/s (per wall second and per CPU second) of each and the ratios. CPU is
the whole process tree's (tree_cpu.py: every process descended from this one, sampled from /proc: Ray's
workers, agents and head, datatrove's pool processes), not `getrusage(RUSAGE_CHILDREN)`, which counts only
children that were waited for and misses Ray's workers. Differences that remain: datatrove's dedup keeps
one document per cluster (no source priority); it computes no signals, ledger, report or manifest. A
truncated .json.gz stops datatrove's JsonlReader with an exception; the bench's reader ends that file there instead (curate ledgers the bad records).

    python bench/bench_pipeline.py --docs 8000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from curate.sample import make_sample
from tree_cpu import TreeCPU

ROOT = Path(__file__).resolve().parent.parent


def timed(fn):
    """(result, wall seconds, CPU seconds of this process and every process descended from it meanwhile)."""
    started = time.monotonic()
    with TreeCPU() as cpu:
        result = fn()
    return result, time.monotonic() - started, cpu.seconds


def run_curate(sample: Path, out: Path, workers: int) -> None:
    env = {**os.environ, "CURATE_SAMPLE": str(sample), "CURATE_OUTPUT": str(out)}
    subprocess.run([sys.executable, "-m", "curate", "run", str(ROOT / "pipelines" / "zyda2.yaml"), "--output", str(out),
                    "-q", "--workers", str(workers)], check=True, env=env, capture_output=True)


def readers(sample: Path):
    from datatrove.pipeline.readers import JsonlReader, ParquetReader

    class JsonlReader(JsonlReader):  # noqa: F811 - datatrove's, but a truncated file ends its part instead of the run
        def read_file(self, filepath: str):
            try:
                yield from super().read_file(filepath)
            except (EOFError, OSError):  # the sample plants truncated .json.gz files; curate ledgers them
                return

    return [ParquetReader(str(sample / "fwe" / "data"), glob_pattern="*/*.parquet", default_metadata={"source": "fwe"}),
            JsonlReader(str(sample / "dclm"), glob_pattern="global-shard_*/local-shard_*/*.jsonl.zst", compression="zstd",
                        default_metadata={"source": "dclm"}),
            ParquetReader(str(sample / "zyda" / "data"), glob_pattern="*/*.parquet", default_metadata={"source": "zyda"}),
            JsonlReader(str(sample / "dolma_cc" / "data"), glob_pattern="*/*.json.gz", compression="gzip",
                        default_metadata={"source": "dolma_cc"})]


def run_datatrove(sample: Path, work: Path, workers: int) -> int:
    """The job from datatrove's blocks; returns the documents the tokenizer wrote."""
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup import MinhashDedupSignature
    from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupBuckets, MinhashDedupCluster, MinhashDedupFilter
    from datatrove.pipeline.filters import FastTextClassifierFilter, LambdaFilter
    from datatrove.pipeline.tokens import DocumentTokenizer

    from curate.tokens.tokenizer import load_tokenizer

    tokenizer = work / "gpt2" / "tokenizer.json"
    tokenizer.parent.mkdir(parents=True)
    load_tokenizer("gpt2", backend="hf").hf.save(str(tokenizer))

    class SourceFastText(FastTextClassifierFilter):
        """datatrove's fastText filter, applied to the sources Zyda-2 classifies (others pass)."""

        name = "fastText (zyda, dolma_cc)"

        def __new__(cls, *args, **kwargs):
            # datatrove asks for the `fasttext-numpy2-wheel` distribution (in its workers too); the `fasttext`
            # module curate installs is the same fastText 0.9.3 code under another distribution name.
            return object.__new__(cls)

        def filter(self, doc):
            return doc.metadata.get("source") not in ("zyda", "dolma_cc") or super().filter(doc)

    config, logs = MinhashConfig(), str(work / "logs")
    tasks = workers
    LocalPipelineExecutor(readers(sample) + [MinhashDedupSignature(output_folder=str(work / "sigs"), config=config)],
                          tasks=tasks, workers=workers, logging_dir=logs + "/1").run()
    LocalPipelineExecutor([MinhashDedupBuckets(input_folder=str(work / "sigs"), output_folder=str(work / "buckets"), config=config)],
                          tasks=config.num_buckets, workers=workers, logging_dir=logs + "/2").run()
    LocalPipelineExecutor([MinhashDedupCluster(input_folder=str(work / "buckets"), output_folder=str(work / "remove"), config=config)],
                          tasks=1, logging_dir=logs + "/3").run()
    LocalPipelineExecutor(readers(sample) + [
        MinhashDedupFilter(input_folder=str(work / "remove")),
        LambdaFilter(lambda doc: doc.metadata.get("source") != "fwe" or float(doc.metadata.get("int_score") or 0) >= 3),
        SourceFastText(str(sample / "models" / "quality_standin.bin"), keep_labels=("High", 0.5), filter_mode="DOCUMENT"),
        DocumentTokenizer(str(work / "tokens"), tokenizer_name_or_path=str(tokenizer), shuffle_documents=False,
                          eos_token="<|endoftext|>"),
    ], tasks=tasks, workers=workers, logging_dir=logs + "/4").run()
    return _tokenized_docs(work / "tokens")


def _tokenized_docs(folder: Path) -> int:
    """Documents in datatrove's token files: one uint64 end offset each in the .ds.index files."""
    return sum(f.stat().st_size // 8 for f in folder.rglob("*.ds.index"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=8000)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        sample = tmp / "sample"
        make_sample(sample, docs=args.docs, seed=0)
        _, c_wall, c_cpu = timed(lambda: run_curate(sample, tmp / "curate", args.workers))
        summary = json.loads((tmp / "curate" / "summary.json").read_text())
        docs = sum(r["in"] for r in summary if r["stage"] == "ingest")
        tokenized = sum(r["kept"] for r in summary if r["stage"] == "tokenize")
        written, d_wall, d_cpu = timed(lambda: run_datatrove(sample, tmp / "datatrove", args.workers))
        load = os.getloadavg()
        print(f"load average {load[0]:.2f} {load[1]:.2f}; {os.cpu_count()} cores; {args.workers} workers each; {docs} documents in")
        print(f"{'':10} {'wall s':>8} {'CPU s':>8} {'docs/s':>8} {'docs/CPU-s':>10} {'tokenized':>10}")
        for name, wall, cpu, out in (("curate", c_wall, c_cpu, tokenized), ("datatrove", d_wall, d_cpu, written)):
            print(f"{name:10} {wall:8.1f} {cpu:8.1f} {docs / wall:8.0f} {docs / cpu:10.0f} {out:10}")
        print(f"ratio (curate / datatrove): {d_wall / c_wall:.1f}x wall, {d_cpu / c_cpu:.1f}x CPU (documents per CPU-second)")


if __name__ == "__main__":
    main()
