"""The tokenize stage: each live document becomes token ids (with EOS, optionally BOS), on an actor pool.

Each actor loads the tokenizer once. `resources` places the actors through Ray (e.g. `num_gpus: 1`
puts them on GPU nodes of a cluster; a cluster without GPUs runs them on CPUs). When a mix stage ran,
each document carries its number of copies from the mixture plan. Output:
`RUN/tokens/docs/<source>/<shard>.parquet` with (id, tokens, copies).
"""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa

from curate.config.schema import Field
from curate.io.parquet import ParquetSink
from curate.runner.tasks import Task
from curate.stages.base import ShardStage
from curate.stages.mix import copies, uniform

RESOURCE_KEYS = {
    "num_cpus": Field((float,), default=1.0, min=0.0),
    "num_gpus": Field((float,), default=0.0, min=0.0),
    "memory_mb": Field((int,), default=None, nullable=True, min=1),
}


class TokenizeStage(ShardStage):
    ACTORS = True
    OPTIONS = {
        "tokenizer": Field((str,), default="gpt2", doc="path to tokenizer.json, 'gpt2' (offline), or a Hub name (online)"),
        "eos": Field((bool,), default=True),
        "bos": Field((bool,), default=False),
        "backend": Field((str,), default="auto", choices=["auto", "hf", "tiktoken"]),
        "resources": Field((dict,), default=dict, keys=RESOURCE_KEYS, doc="Ray resources per actor"),
    }

    def resources(self) -> dict:
        r = self.options["resources"]
        out = {"num_cpus": r["num_cpus"], "num_gpus": r["num_gpus"]}
        if r["memory_mb"]:
            out["memory"] = r["memory_mb"] * 1024 * 1024
        return {k: v for k, v in out.items() if v}

    @property
    def tokenizer(self):
        if getattr(self, "_tokenizer", None) is None:
            from curate.tokens.tokenizer import load_tokenizer

            self._tokenizer = load_tokenizer(self.options["tokenizer"], backend=self.options["backend"], num_threads=1)
        return self._tokenizer

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_tokenizer"}

    def owned_paths(self) -> list[str]:
        return [self.run.path("tokens", "docs"), *super().owned_paths()]

    def _mix_plan(self) -> dict | None:
        mixes = [s for s in self.previous if self.pipeline.stage(s).kind == "mix"]
        return self.run.read_json(self.run.path(mixes[-1], "plan.json")) if mixes else None

    def run_task(self, task: Task) -> dict:
        started = time.monotonic()
        tok = self.tokenizer
        plan = self._mix_plan()
        eos = tok.eos_id if self.options["eos"] else None
        bos = tok.bos_id if self.options["bos"] else None
        n_in = tokens_out = 0
        path = self.run.path("tokens", "docs", task.source, f"{task.shard}.parquet")
        schema = pa.schema([("id", pa.string()), ("tokens", pa.large_list(pa.int32())), ("copies", pa.int32())])
        with ParquetSink(path, schema) as sink:
            for table in self.live_batches(task, columns=["id", "text"]):
                n_in += table.num_rows
                if not table.num_rows:
                    continue
                ids = table.column("id").combine_chunks()
                if plan is not None:
                    spec = plan["sources"][task.source]
                    n = copies(spec["epochs"], uniform(plan["seed"], task.source, ids.to_pylist()))
                else:
                    n = np.ones(len(ids), np.int64)
                encoded = tok.encode_batch(table.column("text").combine_chunks()).with_specials(eos_id=eos, bos_id=bos)
                values = pa.array(encoded.ids.astype(np.int32, copy=False))
                lists = pa.LargeListArray.from_arrays(pa.array(encoded.offsets.astype(np.int64)), values)
                sink.write(pa.table([ids, lists, pa.array(n.astype(np.int32))], schema=schema))
                tokens_out += int((np.diff(encoded.offsets) * n).sum())
        return self.finish_task(task, started, n_in, {}, tokens=tokens_out, tokenizer=tok.identity())
