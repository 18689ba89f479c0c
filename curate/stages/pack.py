"""The pack stage: fixed-length training sequences in the trainer's format, one prefix per source.

Per docs shard (`curate.tokens.shard.pack_shard`): expand each document to its mixture copies, pack
with `best_fit` (split documents longer than `seq_len`, then best-fit-decreasing; document boundaries
kept), `concat`, or `none`, shuffle the sequences deterministically, and write a Megatron `.bin/.idx`
shard (and datatrove `.ds` when asked: whole documents, no padding; see tokens/datatrove_ds.py).
Then phase `merge` concatenates each source's shards, in shard order, into `RUN/tokens/<source>.bin/.idx`
(and `.ds`): memory per task is one shard. It publishes what it wrote per source for the manifest.
"""

from __future__ import annotations

import zlib
from functools import partial

import numpy as np

from curate.config.schema import SEED_MAX, Field
from curate.io import fs
from curate.rundir import PackRecord, TokenizerRecord
from curate.rundir.layout import ACCOUNTING
from curate.stages.base import Stage
from curate.stages.phase import Phase, Task
from curate.stages.registry import stage
from curate.stages.shard import ShardRef, shard_tasks
from curate.tokens.megatron import MegatronWriter, read_megatron
from curate.tokens.shard import METHODS, expand_copies, from_arrow, pack_shard
from curate.io.parquet import read_table


@stage("pack")
class PackStage(Stage):
    NEEDS = ("docs", "tokens")
    PRODUCES = ("packed",)
    OPTIONS = {
        "seq_len": Field((int,), default=2049, min=2, max=1 << 24, doc="tokens per training sequence (2049 = 2048 + 1 shifted label)"),
        "method": Field((str,), default="best_fit", choices=list(METHODS)),
        "seed": Field((int,), default=0, min=0, max=SEED_MAX, doc="deterministic shuffle of sequences"),
        "formats": Field((list,), default=lambda: ["megatron"], item=Field((str,), choices=["megatron", "datatrove"])),
    }

    TABLES = ("tokens/_shards",)
    VERSION = 2   # 2: its markers count the document copies packed (the manifest's split_share is of those)

    def owned_paths(self) -> list[str]:
        return [*super().owned_paths(),
                *(p for p in fs.glob(self.run.path("tokens", "*")) if not p.rstrip("/").endswith(("/docs", "/_shards")))]

    def source_outputs(self, source: str) -> list[str]:
        return [*super().source_outputs(source), *fs.glob(self.run.token_prefix(source) + ".*")]

    def plan(self) -> list[Task[ShardRef]]:
        return shard_tasks(self.run, self.upstream["docs"])

    @property
    def formats(self) -> list[str]:
        """Megatron's files are always written (the merge reads them); datatrove's when asked."""
        return ["megatron", *[f for f in self.options["formats"] if f != "megatron"]]

    def execute(self, tasks: list[Task[ShardRef]], run_phase) -> None:
        tok = self.run.record(self.upstream["tokens"], TokenizerRecord)
        packed = run_phase(Phase(ACCOUNTING, tasks, partial(self.pack, tok), accounts=True))
        sources = [s for s in self.pipeline.priority if any(t.source == s for t in tasks)]
        merge = [Task(s, f"source '{s}'", s) for s in sources]
        run_phase(Phase("merge", merge, partial(self.merge, tok, [(t.source, t.shard) for t in tasks])))
        outputs = {}
        for source in sources:
            mine = [m for m in packed if m["source"] == source]
            outputs[source] = {"prefix": f"tokens/{source}", "files": self.run.token_files(source, self.formats),
                               **{k: sum(m[k] for m in mine) for k in ("in", "copies", "tokens", "sequences", "docs_split")}}
            outputs[source]["documents"] = outputs[source].pop("in")
        self.run.publish(self.name, PackRecord(self.options["seq_len"], self.options["method"], self.formats, outputs))

    def pack(self, tok: TokenizerRecord, shard: ShardRef) -> dict:
        with fs.open_input(self.run.token_docs(shard.source, shard.shard)) as handle:
            table = read_table(handle)
        tokens = expand_copies(from_arrow(table.column("tokens")), table.column("copies").to_numpy().astype(np.int64))
        seed = (self.options["seed"] << 32) ^ zlib.crc32(f"{shard.source}/{shard.shard}".encode())
        stats = pack_shard(tokens, self.run.token_shard(shard.source, shard.shard), vocab_size=tok.vocab_size,
                           seq_len=self.options["seq_len"], method=self.options["method"], seed=seed,
                           formats=self.formats,
                           tokenizer_name=tok.name)
        return {"source": shard.source, "shard": shard.shard, "in": table.num_rows, "kept": table.num_rows, "removed": {},
                "copies": int(stats["docs"]), "tokens": int(stats["tokens"]), "sequences": int(stats["sequences"]),
                "docs_split": int(stats["docs_split"]), "chunks": int(stats["chunks"]), "seq_len": self.options["seq_len"]}

    def merge(self, tok: TokenizerRecord, shards: list[tuple[str, str]], source: str) -> dict:
        """Concatenate a source's shards (sequences, documents and, for .ds, documents and their ends) in shard order."""
        mine = [shard for s, shard in shards if s == source]
        with MegatronWriter(self.run.token_prefix(source), vocab_size=tok.vocab_size) as writer:
            for shard in mine:
                index = read_megatron(self.run.token_shard(source, shard))
                writer.add(index.tokens, index.lengths, np.diff(index.document_indices))
        if "datatrove" in self.options["formats"]:
            self._merge_ds(source, mine, tok)
        return {"in": 0, "shards": len(mine)}

    def _merge_ds(self, source: str, shards: list[str], tok: TokenizerRecord) -> None:
        from curate.tokens.datatrove_ds import DsWriter

        with DsWriter(self.run.token_prefix(source) + ".ds", vocab_size=tok.vocab_size, tokenizer_name=tok.name) as ds:
            for shard in shards:
                base = self.run.token_shard(source, shard) + ".ds"
                ids = np.frombuffer(fs.read_bytes(base), ds.dtype)
                ends = np.frombuffer(fs.read_bytes(base + ".index"), np.uint64).astype(np.int64)
                ds.write(ids, np.diff(np.concatenate([[0], ends])))
