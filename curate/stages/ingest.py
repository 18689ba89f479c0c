"""The ingest stage: read each source in its native format into `RUN/docs/<source>/<shard>.parquet`.

Planning expands every glob (sorted, so shard names are stable), and splits large Parquet files by
row-group ranges. Every input record is accounted for: written as a document, or recorded in the
ledger as `bad_record:<why>`. A shard with more bad records than `max_bad_fraction` fails the run.
"""

from __future__ import annotations

import time

import pyarrow.parquet as pq

from curate.errors import BadShardError, ConfigError
from curate.io import fs
from curate.io.parquet import ParquetSink, write_table
from curate.readers import FORMATS
from curate.readers.base import BadRecords, ReadTask
from curate.readers.jsonl import output_schema, read_jsonl
from curate.readers.parquet import plan_row_groups, read_parquet
from curate.readers.rpv2 import read_rpv2
from curate.runner.tasks import Task
from curate.stages.base import Stage


class IngestStage(Stage):
    OPTIONS = {}

    def plan(self) -> list[Task]:
        tasks = []
        for source in self.pipeline.sources.values():
            fmt = FORMATS[source.format]
            files = self._files(source)
            for index, f in enumerate(files):
                for part, read_task in enumerate(self._split(source, fmt, f, index)):
                    tasks.append(Task(self.name, source.name, read_task.shard, f"{f.path}", payload=read_task))
        return tasks

    def _files(self, source) -> list[fs.InputFile]:
        seen, files = set(), []
        for i, pattern in enumerate(source.paths):
            try:
                matched = fs.expand(pattern, source.storage_options)
            except (OSError, ValueError, ImportError) as exc:
                raise ConfigError(self.pipeline.file, f"sources.{source.name}.paths[{i}]", f"cannot list {pattern!r}: {exc}") from None
            if not matched:
                raise ConfigError(self.pipeline.file, f"sources.{source.name}.paths[{i}]", f"no files match {pattern!r}")
            for f in matched:
                if f.path not in seen:
                    seen.add(f.path)
                    files.append(f)
        return files

    def _split(self, source, fmt, f: fs.InputFile, index: int) -> list[ReadTask]:
        base = ReadTask(source.name, f.path, f.relative, f"{index:06d}-0000", f.size)
        if fmt.kind != "parquet":
            return [base]
        try:
            with fs.open_input(f.path, source.storage_options, block_size=1 << 20) as handle:
                metadata = pq.ParquetFile(handle).metadata
        except Exception as exc:  # a corrupt file is a bad record, found when its task runs
            return [ReadTask(**{**base.__dict__, "unreadable": f"{type(exc).__name__}: {exc}"})]
        target = self.pipeline.execution["task_size_mb"] << 20
        ranges = plan_row_groups(metadata, target)
        return [ReadTask(source.name, f.path, f.relative, f"{index:06d}-{part:04d}", f.size, groups, first)
                for part, (groups, first) in enumerate(ranges)]

    def fingerprint_extra(self, tasks: list[Task]):
        return {"sources": {n: s.__dict__ for n, s in self.pipeline.sources.items()},
                "batch_rows": self.pipeline.execution["batch_rows"],
                "inputs": [(t.payload.path, t.payload.size, t.shard) for t in tasks]}

    def owned_paths(self) -> list[str]:
        return [self.run.path("docs"), *super().owned_paths()]

    def run_task(self, task: Task) -> dict:
        started = time.monotonic()
        rt: ReadTask = task.payload
        source = self.pipeline.sources[rt.source]
        fmt = FORMATS[source.format].with_fields(source.fields)
        bad = BadRecords(rt.source, rt.relative)
        stats: dict = {}
        batch_rows = self.pipeline.execution["batch_rows"]
        docs_path = self.run.docs(rt.source, rt.shard)
        schema = output_schema(fmt) if fmt.kind != "parquet" else None
        with ParquetSink(docs_path, schema) as sink:
            if rt.unreadable:
                bad.add(f"{rt.id_prefix}/unreadable", "unreadable_file", "file", rt.unreadable)
                stats["records"] = 1
            else:
                with fs.open_input(rt.path, source.storage_options) as handle:
                    if fmt.kind == "parquet":
                        batches = read_parquet(rt, fmt, handle, batch_rows, source.columns, bad, stats)
                    elif fmt.kind == "rpv2":
                        batches = read_rpv2(rt, fmt, handle, batch_rows, bad, stats, source.storage_options)
                    else:
                        batches = read_jsonl(rt, fmt, handle, batch_rows, bad, stats)
                    for table in batches:
                        sink.write(table)
            self._check_bad_fraction(task, stats.get("records", 0), bad)
        write_table(self.run.ledger(self.name, rt.source, rt.shard), bad.table(self.name))
        return self.finish_task(task, started, stats.get("records", 0), bad.counts(), input=rt.relative)

    def _check_bad_fraction(self, task: Task, records: int, bad: BadRecords) -> None:
        limit = self.pipeline.execution["max_bad_fraction"]
        if records and len(bad) / records > limit:
            kinds = ", ".join(f"{k.removeprefix('bad_record:')} x{v}" for k, v in sorted(bad.counts().items()))
            raise BadShardError(self.name, task.where,
                                f"{len(bad)} of {records} records are bad ({len(bad) / records:.0%} > max_bad_fraction "
                                f"{limit:.0%}): {kinds}; first: {bad.details[0]}. Fix the input, or raise "
                                f"execution.max_bad_fraction to accept it")
