"""The tokenize stage: each live document becomes token ids (with EOS, optionally BOS), on an actor pool.

Each actor loads the tokenizer once (`setup`). `resources` places the actors through Ray (e.g.
`num_gpus: 1` puts them on GPU nodes of a cluster; a cluster without GPUs runs them on CPUs). When a mix
step ran, each document carries its number of copies from the mixture plan. Output, under the step's own name:
`RUN/<step>/<source>/<shard>.parquet` with (source, id, tokens, copies), so two tokenize steps never share a file;
it publishes the tokenizer's identity, vocabulary size and special ids for the pack and manifest steps, which find
the step (and so its files) through their `upstream`.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from curate.common.schema import Field
from curate.io.parquet import ParquetSink
from curate.rundir.tables import SourceSink
from curate.rundir import MixRecord, TokenizerRecord
from curate.stages.reads import tokenizer_identity
from curate.stages.registry import stage
from curate.stages.resources import RESOURCE_OPTIONS, Resources
from curate.stages.shard import Output, ShardRef, ShardStage
from curate.tokens.mixture import doc_copies
from curate.tokens.shard import encode_documents, to_arrow

SCHEMA = pa.schema([("id", pa.string()), ("tokens", pa.large_list(pa.int32())), ("copies", pa.int32())])


@stage("tokenize")
class TokenizeStage(ShardStage):
    USES = ("mix",)
    PRODUCES = ("tokens",)
    TABLES = ("{step}",)
    COLUMNS = ["id", "text"]
    OPTIONS = {
        "tokenizer": Field((str,), default="gpt2", doc="path to tokenizer.json, 'gpt2' (offline), or a Hub name (online)"),
        "eos": Field((bool,), default=True),
        "bos": Field((bool,), default=False),
        "backend": Field((str,), default="auto", choices=["auto", "hf", "tiktoken"]),
        "resources": Field((dict,), default=dict, keys=RESOURCE_OPTIONS, doc="Ray resources per actor"),
    }

    @property
    def resources(self) -> Resources:
        return Resources.from_options(self.options["resources"], actor=True)

    def reads(self, tasks, source):
        return {f"tokenizer {self.options['tokenizer']}": tokenizer_identity(self.options["tokenizer"])}

    def shard_reads(self, source, shard):
        """With rehydration, each document's copies follow its dedup cluster's size."""
        record = self.run.find_record(self.upstream["mix"], MixRecord) if "mix" in self.upstream else None
        rehydrate = (record.plan or {}).get("rehydrate") if record is not None else None
        return [self.run.clusters(rehydrate["dedup"], source, shard)] if rehydrate else []

    def load_tokenizer(self):
        from curate.tokens.tokenizer import load_tokenizer

        return load_tokenizer(self.options["tokenizer"], backend=self.options["backend"], num_threads=1)

    def preflight(self) -> None:
        """An unknown tokenizer fails here, before any work, not after the stages before it ran."""
        if self.options["tokenizer"] != "gpt2":  # gpt2 ships offline with curate's dependencies
            self.load_tokenizer()

    def execute(self, tasks, run_phase) -> None:
        tok = self.load_tokenizer()
        self.run.publish(self.name, TokenizerRecord(self.options["tokenizer"], tok.name, tok.identity(), tok.vocab_size,
                                                    tok.eos_id, tok.bos_id if self.options["bos"] else None,
                                                    self.options["eos"]))
        super().execute(tasks, run_phase)

    def setup(self) -> None:
        self.tokenizer = self.load_tokenizer()
        self.plan = self.run.record(self.upstream["mix"], MixRecord).plan if "mix" in self.upstream else None

    def sink(self, shard: ShardRef) -> ParquetSink:
        return SourceSink(self.run.token_docs(self.name, shard.source, shard.shard), shard.source, SCHEMA)

    def process(self, table: pa.Table, shard: ShardRef) -> Output | None:
        if not table.num_rows:
            return None
        tok = self.tokenizer
        ids = table.column("id").combine_chunks()
        if self.plan is not None:
            n = doc_copies(self.run, self.plan, shard.source, shard.shard, ids)
        else:
            n = np.ones(len(ids), np.int64)
        encoded = encode_documents(tok, table.column("text").combine_chunks(), tok.eos_id if self.options["eos"] else None,
                                   tok.bos_id if self.options["bos"] else None)
        return Output(rows=pa.table([ids, to_arrow(encoded), pa.array(n.astype(np.int32))], schema=SCHEMA),
                      counts={"tokens": int((encoded.lengths * n).sum())})
