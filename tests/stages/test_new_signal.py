"""A new signal is one small stage: registered, it writes RUN/<step>/, lists its table in its record, and
`filter` and `curate query` read its column with no edit anywhere else."""

import json

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from conftest import run_cli
from curate.common.schema import Field
from curate.query import query
from curate.rundir.tables import SourceSink
from curate.stages.registry import stage
from curate.stages.shard import Output, ShardStage


@stage("char_count")
class CharCountStage(ShardStage):
    """Characters per document, as `n_chars` (and `n_chars_sq`, to show options choosing the columns)."""

    PRODUCES = ("char_count",)
    VIEW = "char_counts"
    COLUMNS = ["id", "text"]
    OPTIONS = {"squared": Field((bool,), default=False, doc="also n_chars_sq")}

    @classmethod
    def keyed_columns(cls, options):
        return ["n_chars", "n_chars_sq"] if options is None or options["squared"] else ["n_chars"]

    def sink(self, shard):
        return SourceSink(self.run.table(self.name, shard.source, shard.shard), shard.source, self._rows(pa.table(
            {"id": pa.array([], pa.string()), "text": pa.array([], pa.string())})).schema)

    def _rows(self, batch: pa.Table) -> pa.Table:
        n = pc.utf8_length(batch.column("text")).cast(pa.int64())
        columns = {"id": batch.column("id"), "n_chars": n}
        if self.options["squared"]:
            columns["n_chars_sq"] = pc.multiply(n, n)
        return pa.table(columns)

    def process(self, batch, shard):
        return Output(rows=self._rows(batch))


def _corpus(tmp_path, n=12):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"d{i}", "text": "x" * (5 * i + 1)}) + "\n" for i in range(n)))
    return src


def _pipeline(tmp_path, steps: str):
    f = tmp_path / "p.yaml"
    f.write_text(f"name: t\nsources:\n  a: {{format: jsonl, paths: '{_corpus(tmp_path)}'}}\nstages:\n  ingest: {{}}\n{steps}")
    return f


def _ids(run, sql):
    return [r["id"] for r in map(json.loads, query(str(run), sql, fmt="json").splitlines())]


@pytest.fixture(scope="module")
def new_signal_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("newsignal")
    f = _pipeline(tmp, "  chars: {use: char_count, squared: true}\n  filter: {where: {all: 'n_chars > 20 AND n_chars_sq < 2500'}}\n")
    assert run_cli(f, "--output", tmp / "run", "--inline", "-q") == 0
    return tmp / "run"


def test_filter_and_query_see_a_new_signal(new_signal_run):
    run = new_signal_run
    assert (run / "chars" / "a").is_dir() and not (run / "char_counts").exists()
    record = json.loads((run / "_state" / "chars" / "record.json").read_text())
    assert record["tables"] == [{"name": "chars", "view": "char_counts", "kind": "char_count", "path": "chars",
                                 "key": ["source", "id"], "columns": ["n_chars", "n_chars_sq"]}]
    kept = _ids(run, "SELECT id FROM kept ORDER BY id")
    assert sorted(kept) == sorted(f"a/in.jsonl/{i}" for i in range(12) if 20 < 5 * i + 1 and (5 * i + 1) ** 2 < 2500)
    removed = _ids(run, "SELECT id FROM ledger ORDER BY id")
    assert len(kept) + len(removed) == 12 and not set(kept) & set(removed)   # kept + ledger == input
    detail = query(str(run), "SELECT detail FROM ledger WHERE id = 'a/in.jsonl/0'", fmt="csv")
    assert "n_chars=1" in detail, "the ledger detail shows the new signal's value"
    assert _ids(run, "SELECT id FROM chars WHERE n_chars = 6") == ["a/in.jsonl/1"]  # the step's own view
    assert _ids(run, "SELECT id FROM char_counts WHERE n_chars_sq = 36") == ["a/in.jsonl/1"]  # the view of its kind


def test_rule_reading_a_column_no_earlier_step_writes_fails_at_load(tmp_path, capsys):
    f = _pipeline(tmp_path, "  filter: {where: {all: 'n_chars > 20'}}\n  chars: {use: char_count}\n")
    assert run_cli(f, "--output", tmp_path / "run", "--inline", "-q") != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "reads column n_chars, which no earlier step writes; add a `char_count` step before 'filter'" in err[0]
    assert not (tmp_path / "run" / "_state").exists(), "nothing ran"
    f = _pipeline(tmp_path, "  chars: {use: char_count}\n  filter: {where: {all: 'n_chars_sq > 20'}}\n")
    assert run_cli(f, "--output", tmp_path / "run2", "--inline", "-q") != 0, "squared: false writes no n_chars_sq"
    assert "reads column n_chars_sq" in capsys.readouterr().err
