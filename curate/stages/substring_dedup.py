"""The substring_dedup stage: every run of at least `min_words` words that occurs more than once anywhere in the
corpus (across sources, or twice in one document) is kept once, in its first place by source priority, then docs
shard, row and position, and cut from the later places, as edits.

Words, not tokens: no tokenizer is needed before mix, a cut never splits a word or a UTF-8 character, and 50 words
(~65 GPT-2 tokens) is a little stricter than Lee et al.'s 50 tokens (see `curate.substring`). The global work is
four phases partitioned by hash (`curate.substring.phases`); the accounting phase turns each shard's repeated
windows into cuts: a word goes when a later copy of a repeated window covers it and no kept copy does (so the first
copy of every repeated window stays whole, overlapping repeats included). Each cut is an edit (kind `repeat`,
replaced by nothing) in `RUN/edits/<step>/`, with how many words it cut, how many copies its window has and where
the kept copy is (`kept_source`, `kept_id`, `kept_start`: the character where the kept copy of the window covering
the cut's first word starts). A document left with fewer than `min_words_left` words goes to the ledger (reason
`substring_duplicate`, detail saying what was repeated and where it is kept). The longest-lived repeated spans (by
copies) of each shard are listed in `RUN/<step>/repeats/` for the report and `curate query` (view `repeats`).
"""

from __future__ import annotations

from functools import cached_property, partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.common.schema import Field
from curate.errors import ConfigError
from curate.dedup import nodes
from curate.dedup.layout import shard_numbers, shard_tag
from curate.io import fs
from curate.io.parquet import write_table
from curate.io.strings import string_spans
from curate.rundir import IngestRecord
from curate.rundir.edits import EDITS
from curate.stages.edit import Edited, EditStage
from curate.stages.substring_dedup_facets import KERNELS, SubstringFacets
from curate.stages.phase import Phase, Task
from curate.stages.registry import stage
from curate.stages.shard import ShardRef, removals
from curate.substring import gram_and_window, kernels
from curate.substring.phases import FP, REP, by_partition, match, queued, read_rows, shared
from curate.substring.records import KIND, REPEATS, KeptCopies, spans, top_runs

REASON = "substring_duplicate"
DOCS_PER_PARTITION = 100_000
SCHEMA = EDITS.append(pa.field("words", pa.int64())).append(pa.field("copies", pa.int64())) \
    .append(pa.field("kept_source", pa.string())).append(pa.field("kept_id", pa.string())).append(pa.field("kept_start", pa.int64()))

@stage("substring_dedup")
class SubstringDedupStage(EditStage):
    FACETS = SubstringFacets
    GLOBAL = True                   # a repeat spans sources; which copy is kept follows the priority
    VERSION = 2                     # 2: a source's docs shards numbered in input order (`layout.shard_numbers`)
    PIPELINE_READS = ("priority",)
    ROW_NUMBERS = True
    TABLES = ("{step}/repeats",)
    OPTIONS = {
        "min_words": Field((int,), default=50, min=2, max=100_000,
                           doc="the shortest repeated run of words that is cut (words: runs of non-whitespace)"),
        "min_words_left": Field((int,), default=20, min=0, max=100_000,
                                doc="a document left with fewer words goes to the ledger (reason substring_duplicate); "
                                    "at most min_words, so that no document holding a kept copy is removed"),
        "partitions": Field((int,), default=None, nullable=True, min=1, max=4096,
                            doc="hash partitions of the global phases; default one per 100,000 documents"),
        "task_rows": Field((int,), default=4_000_000, min=100, max=1_000_000_000,
                           doc="the most fingerprint or window rows a partition task holds at once (40 bytes each); a "
                               "larger partition (a span repeated in millions of documents) is read in chunks of this many"),
        "top": Field((int,), default=20, min=0, max=10_000, doc="repeated spans each docs shard lists in RUN/<step>/repeats/"),
    }

    @classmethod
    def validate_options(cls, options, sources, file, key):
        if options["min_words_left"] > options["min_words"]:
            raise ConfigError(file, f"{key}.min_words_left", f"at most min_words ({options['min_words']}): a document "
                                     "holding the kept copy of a repeat could otherwise be removed, and the text lost")

    def edit_kinds(self) -> list[str]:
        return [KIND]

    def removes(self) -> bool:
        return self.options["min_words_left"] > 0

    @property
    def edits_schema(self) -> pa.Schema:
        return SCHEMA

    def keyed_tables(self) -> list[dict]:
        return [*super().keyed_tables(), {"name": f"{self.name}_repeats", "view": "repeats", "kind": self.KIND,
                                          "path": f"{self.name}/repeats", "key": ["source", "id", "start"], "columns": REPEATS.names[1:]}]

    # ---- the global phases -------------------------------------------------------------------------
    @cached_property
    def numbers(self) -> dict:
        return shard_numbers(self.run.record(self.upstream["docs"], IngestRecord).shards, self.pipeline.priority)

    @property
    def root(self) -> str:
        return self.run.work(self.name)

    def execute(self, tasks, run_phase) -> None:
        docs_step = self.previous[-1] if self.previous else self.upstream["docs"]
        docs = sum(m["kept"] for m in self.run.markers(docs_step))
        parts = self.options["partitions"] or min(4096, max(1, -(-docs // DOCS_PER_PARTITION)))
        by_partition_tasks = [Task(f"{p:05d}", f"partition {p}", p) for p in range(parts)]
        run_phase(Phase("fingerprint", tasks, partial(self.fingerprint_shard, parts), kernels=KERNELS, concurrent=True))
        run_phase(Phase("shared", by_partition_tasks, partial(shared, self.root, cap=self.options["task_rows"]), concurrent=True))
        wanted = queued(self.root, "shared")
        run_phase(Phase("windows", [t for t in tasks if self.tag(t.payload) in wanted], partial(self.window_shard, parts),
                        kernels=KERNELS, concurrent=True))
        run_phase(Phase("match", by_partition_tasks, partial(match, self.root, cap=self.options["task_rows"]), concurrent=True))
        super().execute(tasks, run_phase)

    def tag(self, shard: ShardRef) -> str:
        return shard_tag(*self.numbers[(shard.source, shard.shard)])

    def fingerprint_shard(self, parts: int, shard: ShardRef) -> dict:
        """Phase 1: the winnowed fingerprints of the shard's live documents, by hash partition."""
        priority, index = self.numbers[(shard.source, shard.shard)]
        k, w = gram_and_window(self.options["min_words"])
        cols: dict[str, list] = {c: [] for c in FP}
        n_in = n_words = n_bytes = 0
        for table in self.live_batches(shard, ["id", "text"]):
            n_in += table.num_rows
            data, starts, ends, _ = string_spans(table.column("text").combine_chunks(), self.name)
            n_bytes += int((ends - starts).sum())
            offsets, _, _, ha, _, _ = kernels.words(data, starts, ends)
            n_words += len(ha)
            doc, pos, h = kernels.fingerprints(offsets, ha, k, w)
            cols["hash"].append(h)
            cols["node"].append(nodes.pack(priority, index, table.column("_row").to_numpy()[doc]))
            cols["pos"].append(pos)
        found = {c: np.concatenate(v) if v else np.empty(0, FP[c]) for c, v in cols.items()}
        n = by_partition(self.root, "fp", self.tag(shard), parts, "hash", found)
        return {"in": n_in, "bytes": n_bytes, "words": n_words, "fingerprints": n, "bytes_shuffled": n * 24}

    def window_shard(self, parts: int, shard: ShardRef) -> dict:
        """Phase 3: the keys of the whole windows around the shard's shared fingerprints, by key partition."""
        priority, index = self.numbers[(shard.source, shard.shard)]
        length = self.options["min_words"]
        _, w = gram_and_window(length)
        want = read_rows(self.root, "shared", self.tag(shard), {"node": np.uint64, "pos": np.int64})
        want_rows = nodes.row_of(want["node"])
        cols: dict[str, list] = {c: [] for c in ("a", "b", "node", "pos", "char")}
        for table in self.live_batches(shard, ["id", "text"]):
            rows = table.column("_row").to_numpy()
            sel = np.flatnonzero(np.isin(want_rows, rows))
            if not len(sel):
                continue
            at = np.searchsorted(rows, want_rows[sel])
            docs, want_doc = np.unique(at, return_inverse=True)
            data, starts, ends, _ = string_spans(table.column("text").combine_chunks().take(pa.array(docs)), self.name)
            offsets, cstart, _, ha, hb, _ = kernels.words(data, starts, ends)
            d, s, a, b = kernels.windows(offsets, ha, hb, want_doc.astype(np.int64), want["pos"][sel], length, w)
            cols["a"].append(a)
            cols["b"].append(b)
            cols["node"].append(nodes.pack(priority, index, rows[docs[d]]))
            cols["pos"].append(s)
            cols["char"].append(cstart[offsets[d] + s])
        dtypes = {"a": np.uint64, "b": np.uint64, "node": np.uint64, "pos": np.int64, "char": np.int64}
        found = {c: np.concatenate(v) if v else np.empty(0, dtypes[c]) for c, v in cols.items()}
        n = by_partition(self.root, "win", self.tag(shard), parts, "a", found)
        return {"windows": n, "bytes_shuffled": n * 40}

    # ---- the accounting phase: repeated windows -> cuts ---------------------------------------------
    def setup(self) -> None:
        self._kept = KeptCopies(self.numbers, self.run.docs)

    def process_shard(self, batches, shard: ShardRef):
        self._rep = read_rows(self.root, "rep", self.tag(shard), REP)
        self._rep_rows = nodes.row_of(self._rep["node"])
        self._top: list = []
        for batch in batches:
            self._counts = {}
            out = self.process(batch, shard)
            out.counts.update(self._counts)
            yield out
        top = sorted(self._top, key=lambda r: (-r["copies"], -r["words"], r["id"], r["start"]))[:self.options["top"]]
        path = self.run.table(f"{self.name}/repeats", shard.source, shard.shard)
        if top:
            write_table(path, pa.Table.from_pylist(top, schema=REPEATS))
        elif fs.exists(path):
            fs.remove(path)

    def edit(self, batch: pa.Table) -> pa.Table | Edited:
        rep, length = self._rep, self.options["min_words"]
        texts = batch.column("text").combine_chunks()
        chars = pc.utf8_length(texts).to_numpy(zero_copy_only=False)
        self._counts["chars"] = int(np.nansum(chars.astype(np.float64)))
        rows = batch.column("_row").to_numpy()
        sel = np.flatnonzero(np.isin(self._rep_rows, rows))
        if not len(sel):
            return spans([])
        at = np.searchsorted(rows, self._rep_rows[sel])
        docs, win_doc = np.unique(at, return_inverse=True)
        sub = texts.take(pa.array(docs))
        data, starts, ends, _ = string_spans(sub, self.name)
        offsets, cstart, _, _, _, nchars = kernels.words(data, starts, ends)
        c_doc, w0, w1, c0, c1, cover = kernels.cuts(offsets, cstart, nchars, win_doc.astype(np.int64), rep["pos"][sel],
                                                    rep["first"][sel], length)
        kept = rep["first"][sel]
        self._top += top_runs(self.options["top"], length, batch.column("id").combine_chunks(), sub, docs, win_doc[kept],
                              rep["pos"][sel][kept], rep["copies"][sel][kept], offsets, cstart, nchars)
        n_words = np.diff(offsets)
        cut = np.bincount(c_doc, weights=w1 - w0, minlength=len(docs)).astype(np.int64)
        gone = (cut > 0) & (n_words - cut < self.options["min_words_left"])
        keep = ~gone[c_doc]
        win = sel[cover]
        kept_source, kept_id = self._kept(rep["kept_node"][win])
        self._counts["chars_cut"] = int((c1 - c0)[keep].sum())
        self._counts["chars_removed"] = int(nchars[gone].sum())
        found = spans([docs[c_doc][keep], c0[keep], c1[keep], (w1 - w0)[keep], rep["copies"][win][keep],
                             kept_source.filter(pa.array(keep)), kept_id.filter(pa.array(keep)), rep["kept_char"][win][keep]])
        if not gone.any():
            return found
        ids = batch.column("id").combine_chunks()
        first = {int(d): i for i, d in reversed(list(enumerate(c_doc)))}
        gone_docs = np.flatnonzero(gone)
        details = [f"{cut[g]:,} of {n_words[g]:,} words repeat text kept elsewhere (first cut at character {c0[first[g]]:,}, "
                   f"kept in {kept_source[first[g]].as_py()} {kept_id[first[g]].as_py()} at character {rep['kept_char'][win[first[g]]]:,}); "
                   f"{n_words[g] - cut[g]:,} left, fewer than min_words_left {self.options['min_words_left']}" for g in gone_docs]
        return Edited(found, removals(ids.take(pa.array(docs[gone_docs])), REASON, pa.array(details, pa.string())))
