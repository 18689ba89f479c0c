"""The batch template (`ShardStage`): live documents in batches, side rows to the sink, removals to the ledger, counts."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from curate.errors import StageError
from curate.io.parquet import ParquetSink
from curate.rundir import RunDir
from curate.stages.shard import Output, ShardRef, ShardStage, removals, removed_ids


class DropWord(ShardStage):
    """Removes documents containing a word; writes each batch's size as a side row; counts batches."""

    KIND = "drop_word"
    REMOVES = True
    COLUMNS = ["id", "text"]
    ROW_NUMBERS = True
    TABLES = ("drop_word_rows",)
    OPTIONS = {}
    seen: list = []

    def sink(self, shard: ShardRef):
        return ParquetSink(self.run.table("drop_word_rows", shard.source, shard.shard))

    def process(self, batch: pa.Table, shard: ShardRef) -> Output:
        DropWord.seen.append((shard.source, batch.column("id").to_pylist(), batch.column("_row").to_pylist()))
        hit = pc.match_substring(batch.column("text"), self.WORD)
        return Output(removed=removals(batch.column("id").filter(hit), f"{self.KIND}:{self.WORD}"),
                      rows=batch.select(["id", "_row"]) if self.TABLES else None, counts={"batches": 1})


class DropSpam(DropWord):
    KIND, WORD, TABLES = "drop_spam", "spam", ()

    def sink(self, shard):
        return None


class DropHam(DropWord):
    KIND, WORD = "drop_ham", "ham"


DOCS = {"web": ["spam one", "ham two", "fine three", "spam and ham", "fine five"]}


def test_live_batches_skip_what_earlier_steps_removed_and_the_template_counts(run_stage):
    DropWord.seen = []
    done = run_stage(DropHam, docs=DOCS, before=[(DropSpam, {})], batch_rows=2)
    # drop_spam saw every document, two per batch; drop_ham only the live ones, with their row in the docs file
    spam_batches = [ids for _, ids, _ in DropWord.seen[:3]]
    assert spam_batches == [["web-0", "web-1"], ["web-2", "web-3"], ["web-4"]]
    ham_rows = [(ids, rows) for _, ids, rows in DropWord.seen[3:]]
    assert ham_rows == [(["web-1"], [1]), (["web-2"], [2]), (["web-4"], [4])]
    counts = [{k: v for k, v in c.items() if k not in ("seconds", "node")} for c in done.counts]  # timing aside
    assert counts == [{"source": "web", "shard": "00000", "in": 3, "kept": 2, "removed": {"drop_ham:ham": 1}, "batches": 3}]
    assert done.ledger().column("id").to_pylist() == ["web-1"]
    assert done.table("drop_word_rows").column("id").to_pylist() == ["web-1", "web-2", "web-4"]


def test_a_shard_with_no_live_documents_still_accounts(run_stage):
    done = run_stage(DropSpam, docs={"web": ["spam", "spam spam"], "empty": []})
    assert [(c["source"], c["in"], c["kept"]) for c in done.counts] == [("empty", 0, 0), ("web", 2, 0)]


def test_removals_take_one_reason_or_one_per_id():
    one = removals(pa.array(["a", "b"]), "r")
    assert one.to_pydict() == {"id": ["a", "b"], "reason": ["r", "r"]}
    each = removals(pa.chunked_array([["a"], ["b"]]), pa.array(["x", "y"]), pa.array(["d1", "d2"]))
    assert each.to_pydict() == {"id": ["a", "b"], "reason": ["x", "y"], "detail": ["d1", "d2"]}


def test_removed_ids_is_empty_without_ledgers(tmp_path):
    assert removed_ids(RunDir(str(tmp_path)), ["nothing_yet"], ShardRef("web", "00000")).to_pylist() == []


def test_a_stage_without_process_says_which_class(run_stage):
    class Bare(ShardStage):
        KIND, OPTIONS = "bare", {}

    with pytest.raises(StageError, match="stage 'bare' failed on source 'web' shard 00000.*Bare must implement process"):
        run_stage(Bare)
