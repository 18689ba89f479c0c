"""The pack stage: fixed-length training sequences in the trainer's format, one prefix per source.

Per docs shard: expand each document to its mixture copies, pack with `best_fit` (split documents
longer than `seq_len`, then best-fit-decreasing; document boundaries kept) or `concat`, shuffle the
sequences deterministically, and write a Megatron `.bin/.idx` shard (and datatrove `.ds` when asked).
Then one task per source concatenates its shards, in shard order, into `RUN/tokens/<source>.bin/.idx`
(and `.ds`): memory per task is one shard.
"""

from __future__ import annotations

import time
import zlib

import numpy as np
import pyarrow.parquet as pq

from curate.config.schema import Field
from curate.io import fs
from curate.runner.tasks import Task
from curate.stages.base import ShardStage
from curate.tokens.batch import Tokens
from curate.tokens.megatron import MegatronWriter, read_megatron
from curate.tokens.pack import pack_documents


def expand_copies(tokens: Tokens, copies: np.ndarray) -> Tokens:
    """Repeat whole documents: document i appears copies[i] times (0 drops it)."""
    order = np.repeat(np.arange(len(copies)), copies)
    lengths = tokens.lengths[order]
    offsets = np.zeros(len(order) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    gather = np.repeat(tokens.offsets[:-1][order] - offsets[:-1], lengths) + np.arange(int(offsets[-1]), dtype=np.int64)
    return Tokens(tokens.ids[gather], offsets)


class PackStage(ShardStage):
    OPTIONS = {
        "seq_len": Field((int,), default=2049, min=2, doc="tokens per training sequence (2049 = 2048 + 1 shifted label)"),
        "method": Field((str,), default="best_fit", choices=["best_fit", "concat"]),
        "seed": Field((int,), default=0, doc="deterministic shuffle of sequences"),
        "formats": Field((list,), default=lambda: ["megatron"], item=Field((str,), choices=["megatron", "datatrove"])),
    }

    def owned_paths(self) -> list[str]:
        return [self.run.path("tokens", "_shards"), self.run.path("tokens", "_merged"), *super().owned_paths()]

    def _tokenize_stage(self):
        names = [s for s in self.previous if self.pipeline.stage(s).kind == "tokenize"]
        if not names:
            from curate.errors import CurateError

            raise CurateError(f"stage '{self.name}' needs a tokenize stage before it")
        from curate.stages.tokenize import TokenizeStage

        cfg = self.pipeline.stage(names[-1])
        return TokenizeStage(cfg.name, cfg.options, self.pipeline, self.run, [])

    def shard_prefix(self, source: str, shard: str) -> str:
        return self.run.path("tokens", "_shards", source, shard)

    def source_prefix(self, source: str) -> str:
        return self.run.path("tokens", source)

    def execute(self, tasks: list[Task], runner) -> None:
        super().execute(tasks, runner)
        merge = [Task(self.name, s, "merge", f"source '{s}'", payload="merge") for s in self.pipeline.priority
                 if any(t.source == s for t in tasks)]
        runner.run(self, f"{self.name}: merge", merge, lambda t: self.run.path("_state", self.name, "_merge", t.source, "merge.json"))

    def run_task(self, task: Task) -> dict:
        if task.payload == "merge":
            return self._merge(task)
        started = time.monotonic()
        tok = self._tokenize_stage().tokenizer
        with fs.open_input(self.run.path("tokens", "docs", task.source, f"{task.shard}.parquet")) as handle:
            table = pq.read_table(handle)
        lists = table.column("tokens").combine_chunks()
        tokens = Tokens(lists.values.to_numpy().astype(np.uint32, copy=False), lists.offsets.to_numpy().astype(np.int64))
        tokens = expand_copies(tokens, table.column("copies").to_numpy().astype(np.int64))
        seed = (self.options["seed"] << 32) ^ zlib.crc32(f"{task.source}/{task.shard}".encode())
        packed, stats = pack_documents(tokens, self.options["seq_len"], eos_id=None, method=self.options["method"], seed=seed)
        prefix = self.shard_prefix(task.source, task.shard)
        with MegatronWriter(prefix, vocab_size=tok.vocab_size) as writer:
            writer.add_packed(packed, layout="chunks")
        if "datatrove" in self.options["formats"]:
            from curate.tokens.datatrove_ds import DsWriter

            with DsWriter(prefix + ".ds", vocab_size=tok.vocab_size, tokenizer_name=tok.name, save_loss=True) as ds:
                ds.add_packed(packed, pad_id=tok.eos_id if tok.eos_id is not None else 0)
        return self.finish_task(task, started, table.num_rows, {}, tokens=int(stats.tokens), sequences=int(stats.sequences),
                                docs_split=int(stats.docs_split), chunks=int(stats.chunks), seq_len=self.options["seq_len"])

    def _merge(self, task: Task) -> dict:
        """Concatenate a source's shards (sequences, documents and, for .ds, tokens and loss) in shard order."""
        started = time.monotonic()
        tok = self._tokenize_stage().tokenizer
        shards = [m["shard"] for m in self.run.markers(self.name) if m["source"] == task.source]
        with MegatronWriter(self.source_prefix(task.source), vocab_size=tok.vocab_size) as writer:
            for shard in shards:
                index = read_megatron(self.shard_prefix(task.source, shard))
                doc_sizes = np.diff(index.document_indices)
                writer.add(index.tokens, index.lengths, doc_sizes)
        if "datatrove" in self.options["formats"]:
            self._merge_ds(task.source, shards, tok)
        result = {"source": task.source, "in": 0, "shards": len(shards), "seconds": round(time.monotonic() - started, 4)}
        self.run.write_json(self.run.path("_state", self.name, "_merge", task.source, "merge.json"), result)
        return result

    def _merge_ds(self, source: str, shards: list[str], tok) -> None:
        from curate.tokens.datatrove_ds import DsWriter

        with DsWriter(self.source_prefix(source) + ".ds", vocab_size=tok.vocab_size, tokenizer_name=tok.name, save_loss=True) as ds:
            for shard in shards:
                base = self.shard_prefix(source, shard) + ".ds"
                ids = np.frombuffer(fs.read_bytes(base), ds.dtype)
                ends = np.frombuffer(fs.read_bytes(base + ".index"), np.uint64).astype(np.int64)
                loss = np.frombuffer(fs.read_bytes(base + ".loss"), np.uint8)
                ds.write(ids, np.diff(np.concatenate([[0], ends])), loss)
