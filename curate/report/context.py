"""What a report reads from a run directory (local or fsspec), opened once: the resolved pipeline, the
summary, the manifest, the steps and their kinds, and a DuckDB connection that can read the run's files.

Nothing here computes a chart; the gatherers (funnel, removals, signals, ...) read through it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import cached_property

import duckdb
import pyarrow.parquet as pq
import yaml

from curate.errors import UsageError
from curate.io import fs
from curate.rundir import RunDir
from curate.rundir.accounting import aggregate
from curate.rundir.views import keyed_tables
from curate.sql import bound

HEADER = re.compile(r"^# resolved from (?P<file>.+?); pipeline hash (?P<hash>[0-9a-f]+)")


@dataclass
class RunView:
    root: str
    dir: RunDir
    pipeline: dict
    pipeline_file: str | None    # the recipe the run was resolved from (as written in pipeline.yaml's header)
    pipeline_hash: str | None
    summary: list[dict]
    summary_from: str            # "summary.json", or "task markers" when the run has not written one yet
    manifest: dict | None
    notes: list[str] = field(default_factory=list)

    # ---- steps -----------------------------------------------------------------------------------
    @cached_property
    def steps(self) -> list[tuple[str, str]]:
        """(name, kind) of every enabled step of the pipeline, in order."""
        out = []
        for name, options in (self.pipeline.get("stages") or {}).items():
            options = options or {}
            if options.get("enabled", True) is False:
                continue
            out.append((name, options.get("use", name)))
        return out

    def kind(self, stage: str) -> str:
        return dict(self.steps).get(stage, stage)

    def options(self, stage: str) -> dict:
        return (self.pipeline.get("stages") or {}).get(stage) or {}

    def stages_of(self, *kinds: str) -> list[str]:
        return [name for name, kind in self.steps if kind in kinds]

    @cached_property
    def stage_order(self) -> list[str]:
        """The stages with accounting rows, in run order (the pipeline's steps, then `kept`)."""
        seen = []
        for row in self.summary:
            if row["stage"] not in seen:
                seen.append(row["stage"])
        return seen

    @cached_property
    def sources(self) -> list[str]:
        order = list(self.pipeline.get("priority") or []) + list((self.pipeline.get("sources") or {}).keys())
        order += [r["source"] for r in self.summary]
        return list(dict.fromkeys(order))

    def rows(self, stage: str) -> dict[str, dict]:
        return {r["source"]: r for r in self.summary if r["stage"] == stage}

    def after(self, stage: str) -> list[str]:
        """Stages (with accounting) that come after `stage`."""
        order = self.stage_order
        return order[order.index(stage) + 1:] if stage in order else []

    # ---- files -----------------------------------------------------------------------------------
    def path(self, *parts: str) -> str:
        return self.dir.path(*parts)

    @cached_property
    def keyed(self) -> dict[str, list[str]]:
        """View name (`signals`, `scores`, `dual_use`) -> the folders of the steps' tables behind it (their records)."""
        out: dict[str, list[str]] = {}
        for table in keyed_tables(self.dir):
            out.setdefault(table["view"], []).append(table["path"])
        return out

    def glob(self, *parts: str) -> list[str]:
        """Files under RUN/parts...; a first part naming a view of step tables (`scores`) globs every step behind it."""
        if parts and parts[0] in self.keyed:
            return sorted(p for folder in self.keyed[parts[0]] for p in fs.glob(self.dir.path(folder, *parts[1:])))
        return fs.glob(self.dir.path(*parts))

    def exists(self, *parts: str) -> bool:
        return fs.exists(self.dir.path(*parts))

    def json(self, *parts: str):
        return self.dir.read_json(self.dir.path(*parts))

    def rows_in(self, path: str) -> int:
        """Rows of a Parquet file, from its footer."""
        with fs.open_input(path, block_size=1 << 16) as handle:
            return pq.ParquetFile(handle).metadata.num_rows

    def columns_of(self, path: str) -> dict[str, str]:
        """Column name -> Arrow type (as text) of a Parquet file."""
        with fs.open_input(path, block_size=1 << 16) as handle:
            schema = pq.read_schema(handle)
        return {f.name: str(f.type) for f in schema}

    @cached_property
    def con(self) -> duckdb.DuckDBPyConnection:
        """DuckDB that reads the run's files, local or through the run's fsspec filesystem, within `curate.sql.bound`."""
        con = bound(duckdb.connect(), threads=2)   # memory capped: a large run's queries spill instead of growing
        filesystem, _ = fs.filesystem(self.root)
        if not fs.is_local(filesystem):
            con.register_filesystem(filesystem)
        return con

    def sql(self, query: str, params: list | None = None) -> list[tuple]:
        return self.con.execute(query, params or []).fetchall()


def files_sql(paths: list[str]) -> str:
    """A DuckDB list literal of file paths."""
    return "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "]"


def open_run(root: str) -> RunView:
    """Read what every section needs; a directory without pipeline.yaml is not a run."""
    run = RunDir(root.rstrip("/") if "://" in root else os.path.abspath(root))
    if not fs.exists(run.pipeline_file):
        raise UsageError(f"{root}: not a run directory (no pipeline.yaml); run `curate run PIPELINE --output {root}` first")
    text = fs.read_bytes(run.pipeline_file).decode()
    pipeline = yaml.safe_load(text) or {}
    header = HEADER.match(text)
    notes = []
    summary = run.read_json(run.summary_file)
    summary_from = "summary.json"
    if summary is None:
        steps = [name for name, options in (pipeline.get("stages") or {}).items()
                 if (options or {}).get("enabled", True) is not False] + ["kept"]
        steps = [s for s in steps if run.markers(s)]
        summary = aggregate([(s, run.markers(s)) for s in steps], list(pipeline.get("priority") or []), {}, chain=False)
        summary_from = "task markers"
        notes.append("The run has no summary.json yet (it is running or stopped early): counts come from the task markers "
                     "of the stages that finished tasks, and wall times are not known.")
    manifest = run.read_json(run.manifest_file)
    return RunView(root=run.root, dir=run, pipeline=pipeline, pipeline_file=header["file"] if header else None,
                   pipeline_hash=header["hash"] if header else None, summary=summary, summary_from=summary_from,
                   manifest=manifest, notes=notes)
