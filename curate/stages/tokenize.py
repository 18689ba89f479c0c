"""The tokenize stage: each live document becomes token ids (with EOS, optionally BOS), on an actor pool.

Each actor loads the tokenizer once (`setup`). `resources` places the actors through Ray (e.g.
`num_gpus: 1` puts them on GPU nodes of a cluster; a cluster without GPUs runs them on CPUs). Output, under the
step's own name: `RUN/<step>/<source>/<shard>.parquet` with (source, id, tokens), so two tokenize steps never share a
file; it publishes the tokenizer's identity, vocabulary size and special ids for the pack and manifest steps, which
find the step (and so its files) through their `upstream`.

It reads nothing of the mix plan: a document's copies are the pack step's (`curate.tokens.mixture.doc_copies`), so a
shard's tokens follow from its live documents and the tokenizer alone, and an append whose plan moves every source's
epochs rewrites only the shards whose documents changed. Token ids are also kept by text (`curate.tokens.cache`): a
shard recomputed because its documents changed (more downsampled by the mix, fewer kept by dedup) tokenizes only the
documents whose text it has not tokenized before.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.common.schema import Field
from curate.config.pipeline import canonical_json
from curate.io import fs
from curate.io.ipc import IpcSink
from curate.io.parquet import ParquetSink
from curate.rundir.tables import SourceSink
from curate.rundir import TokenizerRecord
from curate.rundir.digests import text_digests
from curate.stages.reads import tokenizer_identity
from curate.stages.registry import stage
from curate.stages.resources import RESOURCE_OPTIONS, Resources, task_cores
from curate.stages.shard import Output, ShardRef, ShardStage
from curate.tokens import cache
from curate.tokens.shard import encode_documents, to_arrow

SCHEMA = pa.schema([("id", pa.string()), ("tokens", pa.large_list(pa.int32()))])


@stage("tokenize")
class TokenizeStage(ShardStage):
    PRODUCES = ("tokens",)
    TABLES = ("{step}",)
    VERSION = 4   # 2: (id, tokens) per document; the copies moved to the pack step, which reads them from the mix plan
                  # 3: the token lists written without dictionary or statistics
                  # 4: its files lz4, not zstd (`sink`); the kept ids Arrow IPC (`curate.tokens.cache`)
    COLUMNS = ["id", "text"]
    CONCURRENT = True   # inline, shards on threads (each tokenizer call on one: `task_cores`): a shard written from kept
                        # ids, or its Parquet written, leaves the cores to another shard's tokenizing
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

    def load_tokenizer(self, threads: int = 1):
        """The process's tokenizer for these options (`shared_tokenizer`: the one the mix step measured with)."""
        from curate.tokens.tokenizer import shared_tokenizer

        spec = self.options["tokenizer"]
        return shared_tokenizer(spec, canonical_json(tokenizer_identity(spec)), backend=self.options["backend"], num_threads=threads)

    def preflight(self) -> None:
        """An unknown tokenizer fails here, before any work, not after the stages before it ran."""
        if self.options["tokenizer"] != "gpt2":  # gpt2 ships offline with curate's dependencies
            self.load_tokenizer()

    def execute(self, tasks, run_phase) -> None:
        """Publishes the tokenizer's record, then tokenizes; when every result holds (a no-op re-run), the record it
        published last time holds too (the tokenizer's identity is in its fingerprint) and the tokenizer is not loaded."""
        if self.holds and self.run.find_record(self.name, TokenizerRecord) is not None:
            super().execute(tasks, run_phase)
            return
        tok = self.load_tokenizer()
        self.run.publish(self.name, TokenizerRecord(self.options["tokenizer"], tok.name, tok.identity(), tok.vocab_size,
                                                    tok.eos_id, tok.bos_id if self.options["bos"] else None,
                                                    self.options["eos"]))
        key = self.token_key()
        for other in fs.glob(self.run.work(self.name, "tokens", "*")):   # ids of another tokenizer: never read again
            if other.rstrip("/").rsplit("/", 1)[-1] != key:
                fs.remove(other)
        super().execute(tasks, run_phase)
        shards = {f"{t.source}/{t.shard}{cache.SUFFIX}" for t in tasks}   # ids of shards the run no longer has (a file removed)
        for kept in fs.glob(self.run.work(self.name, "tokens", key, "*", f"*{cache.SUFFIX}")):
            if "/".join(kept.rstrip("/").rsplit("/", 2)[-2:]) not in shards:
                fs.remove(kept)

    def setup(self) -> None:
        """The tokenizer, on as many threads as a task may use (`task_cores`: one on a Ray worker, one CPU each, and
        inline, where the machine's cores each run a shard; `--workers 1`: every core for one shard at a time)."""
        self.tokenizer = self.load_tokenizer(task_cores())
        self.cache_key = self.token_key()

    def token_key(self) -> str:
        """The kept token ids' folder: what makes ids from a text (the tokenizer, its backend, BOS and EOS), and how
        they are kept."""
        record = self.run.record(self.name, TokenizerRecord)
        body = canonical_json({**asdict(record), "backend": self.options["backend"], "kept": cache.VERSION})
        return hashlib.sha256(body.encode()).hexdigest()[:16]

    def prefetch(self, tasks) -> list[str]:
        """The kept token ids of the shards about to run: an append writes the shards whose documents the mix's plan
        moved from them (`run_shard`), ~2 MB a shard written by an earlier run."""
        key = self.token_key()
        return [self.cache_path(t.payload, key) for t in tasks]

    def cache_path(self, shard: ShardRef, key: str | None = None) -> str:
        """A shard's kept token ids, in the folder of `key` (default: this worker's, set up)."""
        return self.run.work(self.name, "tokens", key or self.cache_key, shard.source, f"{shard.shard}{cache.SUFFIX}")

    def texts_key(self, shard: ShardRef) -> str:
        """What gives each of the shard's ids its text: the docs file and the edits of the steps that edit text."""
        parts = text_digests(self.run, shard.source, shard.shard, self.editors)
        return hashlib.sha256(canonical_json(parts).encode()).hexdigest()

    def run_shard(self, shard: ShardRef) -> dict:
        """A shard recomputed only because fewer of its documents live (an append moved the mix's down-sampling),
        whose texts are those its kept ids were made from, is written from the kept ids: its text is not read."""
        cached, texts = cache.load(self.cache_path(shard)), self.texts_key(shard)
        if cached is not None and cache.texts_of(cached) == texts:
            live, kept = list(self.live_batches(shard, ["id"])), cached.column("id").combine_chunks()
            if all(pc.all(pc.is_in(b.column("id").cast(pa.string()), value_set=kept)).as_py() is not False for b in live):
                return self.map_shard(shard, partial(self._from_kept, cached), self.sink(shard), ledger=self.REMOVES, live=live)
        return self.map_shard(shard, partial(self._tokenize_shard, cached, texts), self.sink(shard), ledger=self.REMOVES)

    def _from_kept(self, cached: pa.Table, batches, shard: ShardRef):
        """Each batch of live ids with its kept tokens: the rows `tokenize` writes when every id hits."""
        kept, tokens = cached.column("id").combine_chunks(), cached.column("tokens").combine_chunks()
        for batch in batches:
            if not batch.num_rows:
                yield None
                continue
            ids = batch.column("id").combine_chunks()
            got = tokens.take(pc.index_in(ids.cast(pa.string()), value_set=kept))
            lengths = pc.list_value_length(got).to_numpy(zero_copy_only=False).astype(np.int64)
            yield Output(rows=pa.table([ids, got], schema=SCHEMA), counts={"tokens": int(lengths.sum())})

    def _tokenize_shard(self, cached: pa.Table | None, texts: str, batches, shard: ShardRef):
        """Each batch with the shard's kept token ids at hand; the ids of its live documents are kept again."""
        schema = cache.schema_for(texts)
        with IpcSink(self.cache_path(shard), schema) as keep:
            for batch in batches:
                out, kept = self.tokenize(batch, shard, cached)
                if kept is not None:
                    keep.write(kept)
                yield out

    def sink(self, shard: ShardRef) -> ParquetSink:
        """lz4, without dictionary or statistics: zstd made the file a third smaller (a small part of a run folder, next
        to the packed tokens) at twice lz4's cost to write (28 against 14 ms a 1,400-document shard), in every run and in
        every shard an append writes again; a dictionary over the ids of a vocabulary takes, but slows writing 2.3x."""
        return SourceSink(self.run.token_docs(self.name, shard.source, shard.shard), shard.source, SCHEMA, compression="lz4")

    def process(self, table: pa.Table, shard: ShardRef) -> Output | None:
        return self.tokenize(table, shard, None)[0]

    def tokenize(self, table: pa.Table, shard: ShardRef, cached: pa.Table | None) -> tuple[Output | None, pa.Table | None]:
        """(the batch's output, its token ids to keep), taking the ids of documents `cached` has for the same text."""
        if not table.num_rows:
            return None, None
        tok = self.tokenizer
        ids = table.column("id").combine_chunks()
        texts = table.column("text").combine_chunks()
        hashes = cache.text_hashes(texts)
        hit, at = cache.lookup(cached, ids, hashes)
        fresh = texts.filter(pa.array(~hit)) if hit.any() else texts
        encoded = to_arrow(encode_documents(tok, fresh, tok.eos_id if self.options["eos"] else None,
                                            tok.bos_id if self.options["bos"] else None)) if len(fresh) else None
        tokens = cache.merge(cached, hit, at, encoded if encoded is not None else pa.array([], cache.SCHEMA.field("tokens").type))
        lengths = pc.list_value_length(tokens).to_numpy(zero_copy_only=False).astype(np.int64)
        return (Output(rows=pa.table([ids, tokens], schema=SCHEMA), counts={"tokens": int(lengths.sum())}),
                pa.table([ids.cast(pa.string()), pa.array(hashes), tokens], schema=cache.SCHEMA))
