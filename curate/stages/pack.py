"""The pack stage: fixed-length training sequences in the trainer's format, one prefix per source.

Per docs shard (`curate.tokens.shard.pack_shard`): read the token documents of the tokenize step its `upstream`
names, expand each document to its copies under the plan of the mix step before it (`doc_copies`: epochs, seed
and, with rehydration, the dedup cluster sizes; one copy each without a mix step: the tokenize step writes each
document once, so a plan that moved leaves its files alone), pack with `best_fit` (split documents longer than
`seq_len`, then best-fit-decreasing; document boundaries kept), `concat`, or `none`, shuffle the sequences
deterministically, and write each format's shard files (`curate.tokens.formats`: Megatron `.bin/.idx` always,
datatrove `.ds` when asked) to `RUN/<step>/_shards/<source>/`. Then phase `merge` has each format concatenate a
source's shards, in shard order, into `RUN/<step>/<source>.*`: memory per task is one shard. Beside each
format's files, a document map says which document every token came from (`curate.tokens.docmap`, `curate trace`). Everything lives
under the step's own name, so two pack steps never share a file. It publishes what it wrote per source for
the manifest.
"""

from __future__ import annotations

import zlib
from functools import partial

import numpy as np

from curate.common.schema import SEED_MAX, Field
from curate.io import fs
from curate.rundir import MixRecord, PackRecord, TokenizerRecord
from curate.rundir.layout import ACCOUNTING
from curate.stages.base import Stage
from curate.stages.phase import Phase, Task
from curate.stages.facets import Facets, Kernel
from curate.stages.registry import stage
from curate.stages.shard import ShardRef, shard_tasks
from curate.tokens.docmap import SHARD_MAPS, DocKeys, merge_maps
from curate.tokens.formats import get as token_format
from curate.tokens.formats import names as format_names
from curate.tokens.mixture import doc_copies
from curate.tokens.shard import METHODS, expand_copies, from_arrow, pack_shard
from curate.io.parquet import read_table


class PackFacets(Facets):
    REPORT = ("curate.report.mixture:SECTION",)   # the plan against the tokens written, and how well they pack
    KERNELS = (Kernel("the best-fit packing kernel", "curate.tokens.binpack:warm", ("curate.tokens.binpack:_bfd",)),)


@stage("pack")
class PackStage(Stage):
    NEEDS = ("docs", "tokens")
    USES = ("mix",)   # each document's copies: the tokenize step writes a document once, whatever the plan
    PRODUCES = ("packed",)
    FACETS = PackFacets
    OPTIONS = {
        "seq_len": Field((int,), default=2049, min=2, max=1 << 24, doc="tokens per training sequence (2049 = 2048 + 1 shifted label)"),
        "method": Field((str,), default="best_fit", choices=list(METHODS)),
        "seed": Field((int,), default=0, min=0, max=SEED_MAX, doc="deterministic shuffle of sequences"),
        "formats": Field((list,), default=lambda: ["megatron"], item=Field((str,), choices=format_names)),
    }

    TABLES = ("{step}/_shards",)
    PER_SHARD = True   # a docs shard packs the same whenever its token documents and its copies are the same: an append
                       # packs the new or changed shards again and merges every source it touched (`shard_facts`)
    VERSION = 5   # 2: its markers count the document copies packed (the manifest's split_share is of those)
                  # 3: its files moved from RUN/tokens/ to RUN/<step>/ (a run made before packs once more)
                  # 4: a document map beside each format's files (curate/tokens/docmap.py); the files' bytes unchanged
                  # 5: a shard's maps in one file (docmap.SHARD_MAPS), the merged maps' bytes unchanged
                  # (5 still) it gives each document its copies from the mix plan (tokenize no longer does), and it is
                  # keyed per docs shard (PER_SHARD): the bytes are unchanged
    ALWAYS = "megatron"   # written whatever `formats` says: the manifest's megatron_data_path names its files

    def owned_paths(self) -> list[str]:
        return [*super().owned_paths(), self.run.path(self.name)]

    def source_outputs(self, source: str) -> list[str]:
        return [*super().source_outputs(source), *fs.glob(self.run.token_prefix(self.name, source) + ".*")]

    def shard_outputs(self, source: str, shard: str) -> list[str]:
        """The shard's packed files and maps, in every known format: a format no longer asked for goes with the rest."""
        prefix = self.run.token_shard(self.name, source, shard)
        return [*(prefix + suffix for name in format_names() for suffix in token_format(name).suffixes), prefix + SHARD_MAPS]

    def record_part(self, step: str, source: str):
        """Of the mix plan, nothing whole: a shard's copies are keyed per shard (`shard_facts`), so an append that moves
        a source's epochs re-packs only the shards where a document's copies moved."""
        return "copies: per shard" if step == self.upstream.get("mix") else None

    def shard_facts(self, source: str, shard: str) -> dict:
        """The digest of the shard's copies that the mix step computed (its marker's `copies`)."""
        if "mix" not in self.upstream:
            return {}
        marker = self.run.read_json(self.run.marker(self.upstream["mix"], ACCOUNTING, f"{source}/{shard}")) or {}
        return {"copies": marker.get("copies")}

    def plan(self) -> list[Task[ShardRef]]:
        return shard_tasks(self.run, self.upstream["docs"])

    @property
    def formats(self) -> list[str]:
        """The formats written, `ALWAYS` first, then those asked for in their order."""
        return [self.ALWAYS, *[f for f in self.options["formats"] if f != self.ALWAYS]]

    def execute(self, tasks: list[Task[ShardRef]], run_phase) -> None:
        tok = self.run.record(self.upstream["tokens"], TokenizerRecord)
        plan = self.run.record(self.upstream["mix"], MixRecord).plan if "mix" in self.upstream else None
        packed = run_phase(Phase(ACCOUNTING, tasks, partial(self.pack, tok, plan), accounts=True, concurrent=True,
                                 kernels=self.FACETS.kernels(self.options)))
        sources = [s for s in self.pipeline.priority if any(t.source == s for t in tasks)]
        for source in sources:   # the files of a format an earlier run asked for and this one does not
            for name in sorted(set(format_names()) - set(self.formats)):
                for suffix in token_format(name).all_suffixes():
                    fs.remove(self.run.token_prefix(self.name, source) + suffix)
        merge = [Task(f"{s}.{name}", f"source '{s}' {name}", (s, name)) for s in sources for name in self.formats]
        run_phase(Phase("merge", merge, partial(self.merge, tok, [(t.source, t.shard) for t in tasks]), concurrent=True))
        outputs = {}
        for source in sources:
            mine = [m for m in packed if m["source"] == source]
            outputs[source] = {"prefix": f"{self.name}/{source}",
                               "files": self.run.token_files(self.name, source, self.formats),
                               **{k: sum(m[k] for m in mine) for k in ("in", "copies", "tokens", "sequences", "docs_split")}}
            outputs[source]["documents"] = outputs[source].pop("in")
        self.run.publish(self.name, PackRecord(self.options["seq_len"], self.options["method"], self.formats, outputs,
                                               self.upstream["tokens"]))

    def pack(self, tok: TokenizerRecord, plan: dict | None, shard: ShardRef) -> dict:
        with fs.open_input(self.run.token_docs(self.upstream["tokens"], shard.source, shard.shard)) as handle:
            table = read_table(handle, columns=["id", "tokens"])
        ids = table.column("id").combine_chunks()
        copies = doc_copies(self.run, plan, shard.source, shard.shard, ids) if plan is not None else np.ones(len(ids), np.int64)
        tokens = expand_copies(from_arrow(table.column("tokens")), copies)
        seed = (self.options["seed"] << 32) ^ zlib.crc32(f"{shard.source}/{shard.shard}".encode())
        stats = pack_shard(tokens, self.run.token_shard(self.name, shard.source, shard.shard), vocab_size=tok.vocab_size,
                           seq_len=self.options["seq_len"], method=self.options["method"], seed=seed,
                           formats=self.formats, tokenizer_name=tok.name,
                           keys=DocKeys(shard.source, ids, copies))
        return {"source": shard.source, "shard": shard.shard, "in": table.num_rows, "kept": table.num_rows, "removed": {},
                "copies": int(stats["docs"]), "tokens": int(stats["tokens"]), "sequences": int(stats["sequences"]),
                "docs_split": int(stats["docs_split"]), "chunks": int(stats["chunks"]), "seq_len": self.options["seq_len"]}

    def merge(self, tok: TokenizerRecord, shards: list[tuple[str, str]], job: tuple[str, str]) -> dict:
        """One format of a source: its shards (sequences, documents and their ends) and their maps concatenated in shard
        order. A task per format, so that a source's formats merge at once (an append that grows one source merges
        only that one)."""
        source, name = job
        parts = [self.run.token_shard(self.name, source, shard) for s, shard in shards if s == source]
        prefix, form = self.run.token_prefix(self.name, source), token_format(name)
        form.merge(prefix, parts, vocab_size=tok.vocab_size, tokenizer_name=tok.name)
        if form.map_suffix:
            merge_maps({name: prefix + form.map_suffix}, [part + SHARD_MAPS for part in parts])
        return {"in": 0, "shards": len(parts)}
