"""The ingest stage: read each source in its native format into `RUN/docs/<source>/<shard>.parquet`.

Planning expands every glob (sorted, so shard names are stable) and lets each source's reader (`READERS`,
by the format's kind) split its files into tasks; the stage never branches on the kind. Phase `read`
reads each file (every input record becomes a document or a ledger row `bad_record:<why>`; a shard with
more bad records than `max_bad_fraction` fails the run) and hands its ids to hash partitions; phase `ids`
finds ids that an earlier file (or task) of the same source already has (a shard's results follow from its input
and the inputs before it in its source, its key: an append of files that sort last reads only them); the accounting phase drops those
later copies into the ledger as `bad_record:duplicate_id`, so an id means one document, gives an empty
shard its source's columns. Each docs shard has an id index (`curate.rundir.idindex`, what `curate why` looks ids up
in), written as it is read and again when it loses ids. Then the stage publishes the list of docs shards, which every later shard
stage plans from.
"""

from __future__ import annotations

import hashlib
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.config.columns import check_rule_columns
from curate.config.pipeline import canonical_json
from curate.errors import BadShardError, ConfigError
from curate.io import fs
from curate.io.parquet import DOCS_PLAIN, ParquetSink, read_table, write_table
from curate.readers import FORMATS, READERS
from curate.readers.base import BadRecords, ReadOptions, ReadTask
from curate.readers.duplicates import apply_duplicates, content_hash, id_partitions, later_copies_in, partitioned, take_columns
from curate.rundir import IngestRecord, ledger_table, write_ledger
from curate.rundir.idindex import write_index
from curate.rundir.layout import ACCOUNTING
from curate.stages.base import Stage
from curate.stages.phase import Phase, Task
from curate.stages.reads import source_files, stable_name
from curate.stages.registry import STAGES, stage


@stage("ingest")
class IngestStage(Stage):
    PRODUCES = ("docs",)
    TABLES = ("docs",)
    VERSION = 2                     # 2: id partitions hold a task's place in its source (was: in the whole plan)
    PER_SHARD = True                # a new file of a source reads that file, not the source again (`shard_identities`)
    SHARD_PARTS = ("reads.inputs",)

    def plan(self) -> list[Task[ReadTask]]:
        tasks = []
        for source in self.pipeline.sources.values():
            fmt = FORMATS[source.format]
            for f in source_files(self.pipeline.file, source):
                for rt in self._split(source, fmt, f):
                    tasks.append(Task(f"{source.name}/{rt.shard}", f.path, rt, source.name, rt.shard))
        return tasks

    def check(self, tasks: list[Task[ReadTask]]) -> None:
        """Before any file is read: the columns every later rule reads are in each file of its source (a Parquet
        file's footer, read while planning, names them), and each file has the columns its source projects."""
        docs: dict[str, list] = {name: [] for name in self.pipeline.sources}
        seen = set()
        for t in tasks:
            rt = t.payload
            if rt.unreadable or rt.path in seen:
                continue
            seen.add(rt.path)
            source = self.pipeline.sources[rt.source]
            fmt = FORMATS[source.format].with_fields(source.fields)
            try:
                columns = READERS[fmt.kind].columns(fmt, source.columns, rt.columns)
            except ValueError as exc:
                raise ConfigError(self.pipeline.file, f"sources.{rt.source}", f"file {rt.relative}: {exc}") from None
            docs[rt.source].append((rt.relative, columns))
        check_rule_columns(self.pipeline.stages, STAGES, self.pipeline.file, docs)

    def execute(self, tasks: list[Task[ReadTask]], run_phase) -> None:
        partitions = id_partitions(sum(t.payload.size for t in tasks))
        order = {t.key: i for s in self.pipeline.sources for i, t in enumerate(t for t in tasks if t.source == s)}
        reads = run_phase(Phase("read", tasks, partial(self.read, partitions, order), concurrent=True))
        plans = self.plans(tasks, reads)
        self.tidy(plans)
        checks = [Task(f"{s}/{plan['digest']}-p{p:05d}", f"the ids of source '{s}' (partition {p})", (s, p))
                  for s, plan in plans.items() for p in range(partitions)]
        run_phase(Phase("ids", checks, partial(self.find_duplicates, plans), concurrent=True))
        by_key = {t.key: r for t, r in zip(tasks, reads)}
        run_phase(Phase(ACCOUNTING, tasks, partial(self.settle, by_key, self.reference_shards(tasks, reads), plans), accounts=True,
                        concurrent=True))
        self.run.publish(self.name, IngestRecord([{"source": t.source, "shard": t.shard, "input": t.payload.relative}
                                                  for t in tasks]))

    def shard_identities(self, tasks: list[Task[ReadTask]], source: str) -> dict[str, str]:
        """Per docs shard: its input and every input before it in the source's order (path, size, version, shard).
        Which of a shard's ids are later copies follows from exactly those, so a file added after the others reads
        only itself; one added (or changed, or removed) before others reads those again too (same bytes)."""
        out, running = {}, hashlib.sha256()
        for t in tasks:
            if t.source == source:
                running.update(canonical_json([t.payload.path, t.payload.size, t.payload.version, t.shard]).encode())
                out[t.shard] = running.hexdigest()
        return out

    def plans(self, tasks: list[Task[ReadTask]], reads) -> dict[str, dict]:
        """Per source: its shards in order (shard, input, the id partitions it wrote) and a digest of them, which names
        the id checks and duplicate lists made from them (an append checks its source's ids again, under new names)."""
        out: dict[str, dict] = {s: {"shards": []} for s in self.pipeline.sources}
        for t, r in zip(tasks, reads):
            out[t.source]["shards"].append((t.shard, t.payload.relative, r.get("partitions", [])))
        for source, plan in out.items():
            ids = self.shard_identities(tasks, source)
            plan["digest"] = hashlib.sha256(canonical_json([ids[sh] for sh, _, _ in plan["shards"]][-1:]).encode()).hexdigest()[:12]
        return out

    def tidy(self, plans: dict[str, dict]) -> None:
        """Remove what no planned shard or digest names any more: id checks and duplicate lists of an earlier plan, the
        id partitions and index of a removed input's shard."""
        for source, plan in plans.items():
            for marker in fs.glob(self.run.state(self.name, "ids", source, "*.json")):
                if not marker.rstrip("/").rsplit("/", 1)[-1].startswith(f"{plan['digest']}-"):
                    fs.remove(marker)
            for folder in fs.glob(self.run.work(self.name, "duplicates", source, "*")):
                if folder.rstrip("/").rsplit("/", 1)[-1] != plan["digest"]:
                    fs.remove(folder)
            planned = {f"{shard}.parquet" for shard, _, _ in plan["shards"]}
            for path in [*fs.glob(self.run.work(self.name, "index", source, "*.parquet")),
                         *fs.glob(self.run.work(self.name, "ids", "p=*", source, "*.parquet")),
                         *fs.glob(self.run.docs(source, "*")), *fs.glob(self.run.ledger(self.name, source, "*"))]:
                if path.rstrip("/").rsplit("/", 1)[-1] not in planned:
                    fs.remove(path)

    @staticmethod
    def reference_shards(tasks, reads) -> dict:
        """Per source, a shard with documents: an empty shard of that source takes its columns."""
        out = {}
        for t, r in zip(tasks, reads):
            if r["docs"] and t.source not in out:
                out[t.source] = t.shard
        return out

    def _split(self, source, fmt, f: fs.InputFile) -> list[ReadTask]:
        version = content_hash(f.path, source.storage_options) if self.pipeline.execution["fingerprint"] == "content" \
            and not f.unreadable else f.version
        whole = ReadTask(source.name, f.path, f.relative, f"{stable_name(f.relative)}-0000", f.size, unreadable=f.unreadable,
                         version=version)
        if f.unreadable:  # never open a dangling link or a FIFO: it is a ledger row
            return [whole]
        return READERS[fmt.kind].plan(whole, fmt, source.storage_options, self.pipeline.execution["task_size_mb"] << 20)

    def reads(self, tasks: list[Task[ReadTask]], source: str | None):
        """The source's settings and every input's path, size and version (modification time, ETag, or its
        content hash with `execution.fingerprint: content`): a file edited in place is read again. The
        number of id partitions depends on every source's size, and the bad-record limit on the run."""
        return {"source": self.pipeline.sources[source].__dict__,
                "inputs": [(t.payload.path, t.payload.size, t.payload.version, t.shard) for t in tasks if t.source == source],
                "id_partitions": id_partitions(sum(t.payload.size for t in tasks)),
                "max_bad_fraction": self.pipeline.execution["max_bad_fraction"]}

    def shard_outputs(self, source: str, shard: str) -> list[str]:
        """A docs shard and its ledger: what later steps read of it (its id partitions follow the run's size)."""
        return [self.run.docs(source, shard), self.run.ledger(self.name, source, shard)]

    def source_outputs(self, source: str) -> list[str]:
        return [*super().source_outputs(source), self.run.work(self.name, "duplicates", source),
                self.run.work(self.name, "index", source),   # its shards' id indexes (RunDir.id_index)
                *fs.glob(self.run.work(self.name, "ids", "p=*", source))]

    def read(self, partitions: int, order: dict, rt: ReadTask) -> dict:
        """Read one file (or row-group range) into its docs shard; bad records go to the ledger, ids to
        their hash partitions."""
        source = self.pipeline.sources[rt.source]
        fmt = FORMATS[source.format].with_fields(source.fields)
        bad = BadRecords(rt.source, rt.relative)
        stats: dict = {}
        reader = READERS[fmt.kind]
        options = ReadOptions(self.pipeline.execution["batch_rows"], source.columns, source.storage_options)
        with ParquetSink(self.run.docs(rt.source, rt.shard), reader.schema(fmt), plain=DOCS_PLAIN) as sink:
            if rt.unreadable:
                bad.add(f"{rt.id_prefix}/unreadable", "unreadable_file", "file", rt.unreadable)
                stats["records"] = 1
            else:
                with fs.open_input(rt.path, source.storage_options) as handle:
                    for table in reader.read(rt, fmt, handle, options, bad, stats):
                        sink.write(table)
            self._check_bad_fraction(rt, stats.get("records", 0), bad)
        counts = write_ledger(self.run.ledger(self.name, rt.source, rt.shard),
                              ledger_table(rt.source, self.name, bad.ids, bad.reasons, bad.details))
        docs = self.run.docs(rt.source, rt.shard)
        with fs.open_input(docs) as handle:
            ids = read_table(handle, columns=["id"]).column("id") if sink.rows else pa.array([], pa.string())
        self.index(rt.source, rt.shard, ids)   # settle redoes it if the shard loses ids
        written = []
        for p, table in partitioned(ids, order[f"{rt.source}/{rt.shard}"], partitions):
            write_table(self.run.work(self.name, "ids", f"p={p:05d}", rt.source, f"{rt.shard}.parquet"), table, "lz4")
            written.append(p)
        records = stats.get("records", 0)
        return {"in": records, "docs": sink.rows, "removed": dict(sorted(counts.items())), "input": rt.relative,
                "partitions": written}

    def find_duplicates(self, plans: dict, job: tuple[str, int]) -> dict:
        """One hash partition of a source's ids (the files its planned shards wrote there): later copies of an id, by
        the docs shard that holds them."""
        source, p = job
        plan = plans[source]
        found = later_copies_in([self.run.work(self.name, "ids", f"p={p:05d}", source, f"{shard}.parquet")
                                 for shard, _, written in plan["shards"] if p in written])
        for order in np.unique(found.column("order").to_numpy()) if found.num_rows else []:
            shard = plan["shards"][int(order)][0]
            mine = found.filter(pc.equal(found.column("order"), int(order)))
            first = [plan["shards"][int(o)][1] for o in mine.column("first_order").to_pylist()]
            write_table(self.run.work(self.name, "duplicates", source, plan["digest"], shard, f"p={p:05d}.parquet"),
                        mine.append_column("first_input", pa.array(first, pa.string())), "lz4")
        return {"in": 0, "duplicates": found.num_rows}

    def settle(self, reads: dict, reference: dict, plans: dict, rt: ReadTask) -> dict:
        """The shard's accounting: its read counts, less the later copies of ids found in other shards; an
        empty shard (a bad or empty file) gets its source's columns, so SQL over the source binds."""
        r = reads[f"{rt.source}/{rt.shard}"]
        removed, docs = dict(r["removed"]), r["docs"]
        parts = fs.glob(self.run.work(self.name, "duplicates", rt.source, plans[rt.source]["digest"], rt.shard, "*.parquet"))
        if parts:
            n = apply_duplicates(parts, self.run.docs(rt.source, rt.shard), self.run.ledger(self.name, rt.source, rt.shard),
                                 docs, rt.source, self.name, rt.relative)
            removed["bad_record:duplicate_id"] = removed.get("bad_record:duplicate_id", 0) + n
            docs -= n
            self.index(rt.source, rt.shard)
        elif not docs and rt.source in reference:
            take_columns(self.run.docs(rt.source, rt.shard), self.run.docs(rt.source, reference[rt.source]))
        return {"source": rt.source, "shard": rt.shard, "in": r["in"], "kept": docs, "removed": dict(sorted(removed.items())),
                "input": rt.relative}

    def index(self, source: str, shard: str, ids=None) -> None:
        """The id index of a docs shard (`ids`: its id column, when at hand): `curate why` finds a document by it."""
        if ids is None:
            with fs.open_input(self.run.docs(source, shard)) as handle:
                ids = read_table(handle, columns=["id"]).column("id")
        write_index(self.run.id_index(self.name, source, shard), ids)

    def _check_bad_fraction(self, rt: ReadTask, records: int, bad: BadRecords) -> None:
        limit = self.pipeline.execution["max_bad_fraction"]
        if records and len(bad) / records > limit:
            kinds = ", ".join(f"{k.removeprefix('bad_record:')} x{v}" for k, v in sorted(bad.counts().items()))
            raise BadShardError(self.name, rt.path,
                                f"{len(bad)} of {records} records are bad ({len(bad) / records:.0%} > max_bad_fraction "
                                f"{limit:.0%}): {kinds}; first: {bad.details[0]}. Fix the input, or raise "
                                f"execution.max_bad_fraction to accept it")
