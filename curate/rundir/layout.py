"""Every path of a run directory (a local path or an fsspec URI), spelled out once.

```
RUN/pipeline.yaml  summary.json  manifest.json  _lock.json (the run writing it now)
RUN/<table>/<source>/<shard>.parquet      docs, kept (keyed by id); kept carries `source` and one schema
                                          across sources (tables.py)
RUN/quarantine/<step>/<source>/<shard>.parquet  documents a step set aside, whole (kept's columns), per step
RUN/<step>/<source>/<shard>.parquet       a step's own table keyed by id (signals, classify scores, dual_use decisions),
                                          listed in its record (`keyed_tables`, rundir/views.py)
RUN/ledger/<stage>/<source>/<shard>.parquet
RUN/edits/<step>/<source>/<shard>.parquet  spans a text-editing step (pii) replaced; later steps apply them (rundir/edits.py)
RUN/<stage>/clusters/<source>/...         a dedup step's clusters (id, source, cluster, kept)
RUN/_work/<stage>/...                     a stage's intermediate files (band keys, graph rounds, scans, scores)
RUN/_work/<ingest>/index/<source>/<shard>.parquet  the docs shard's ids by hash, for `curate why` (idindex.py)
RUN/<tokenize step>/<source>/<shard>.parquet  token ids per document (id, tokens, source); copies: the pack step's
RUN/<pack step>/<source>.bin/.idx (.ds)   packed tokens per source, one file set per format (tokens/formats.py);
RUN/<pack step>/_shards/<source>/<shard>.*  the shards merged into them (RUN/tokens/ before: runner/migrate.py)
RUN/_state/<stage>/stage.json             per source: the fingerprint and its named parts; completion
RUN/_state/<stage>/record.json            what the stage publishes for later steps (records.py)
RUN/_state/<stage>/<phase>/<task>.json    completion marker and counts of one task
RUN/_state/<stage>/<phase>.key.json       per source: what a keyed phase's results depend on
```
The accounting phase of every stage is named `shards`; its task markers carry the per-shard counts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from curate.io import fs

ACCOUNTING = "shards"
PIPELINE_HEADER = "# resolved from "   # the first line of a run's pipeline.yaml (and of a published copy)


DIGESTS = "digests.json"   # in _state/, beside the steps' folders: not a step's, so never removed as stale


@dataclass(frozen=True)
class RunDir:
    root: str

    def path(self, *parts: str) -> str:
        return fs.join(self.root, *parts)

    def relative(self, path: str) -> str:
        return path[len(self.root.rstrip("/")) + 1:]

    # ---- tables keyed by id, one file per docs shard ---------------------------------------------
    def table(self, name: str, source: str, shard: str) -> str:
        return self.path(name, source, f"{shard}.parquet")

    def table_glob(self, name: str, source: str = "*") -> str:
        return self.path(name, source, "*.parquet")

    def table_sources(self, name: str) -> list[str]:
        return sorted({p.rstrip("/").rsplit("/", 2)[-2] for p in fs.glob(self.table_glob(name))})

    def docs(self, source: str, shard: str) -> str:
        return self.table("docs", source, shard)

    def kept(self, source: str, shard: str) -> str:
        return self.table("kept", source, shard)

    def ledger(self, stage: str, source: str, shard: str) -> str:
        return self.path("ledger", stage, source, f"{shard}.parquet")

    def edits(self, step: str, source: str, shard: str) -> str:
        """The spans a text-editing step replaced in one docs shard (see curate/rundir/edits.py)."""
        return self.path("edits", step, source, f"{shard}.parquet")

    def edits_glob(self) -> str:
        return self.path("edits", "*", "*", "*.parquet")

    def ledger_glob(self) -> str:
        return self.path("ledger", "*", "*", "*.parquet")

    # ---- a stage's own files ---------------------------------------------------------------------
    def work(self, stage: str, *parts: str) -> str:
        """A stage's intermediate files (band keys, graph rounds, scans, model scores): `RUN/_work/<stage>/`."""
        return self.path("_work", stage, *parts)

    def id_index(self, stage: str, source: str, shard: str) -> str:
        """The ingest step `stage`'s index of one docs shard's ids (hash -> row, rundir/idindex.py)."""
        return self.work(stage, "index", source, f"{shard}.parquet")

    def quarantine(self, stage: str, source: str, shard: str) -> str:
        """Documents `stage` set aside, whole, for audit: each step that quarantines has its own part."""
        return self.path("quarantine", stage, source, f"{shard}.parquet")

    def clusters(self, stage: str, source: str, shard: str) -> str:
        return self.path(stage, "clusters", source, f"{shard}.parquet")

    def clusters_glob(self) -> str:
        return self.path("*", "clusters", "*", "*.parquet")

    # ---- tokens: a tokenize step's table and a pack step's files, each under its step's name -------
    def token_docs(self, step: str, source: str, shard: str) -> str:
        """Token ids per document of one docs shard, as tokenize step `step` wrote them."""
        return self.table(step, source, shard)

    def token_shard(self, step: str, source: str, shard: str) -> str:
        """Prefix of one docs shard packed by pack step `step`, before the per-source merge."""
        return self.path(step, "_shards", source, shard)

    def token_prefix(self, step: str, source: str) -> str:
        """Prefix of a source's packed files (`<prefix>.bin`, ...) written by pack step `step`."""
        return self.path(step, source)

    def token_files(self, step: str, source: str, formats: list[str]) -> list[str]:
        """The merged token files of a source and their document maps, relative to the run, in the order of `formats`."""
        from curate.tokens.formats import get

        return [f"{step}/{source}{suffix}" for fmt in formats for suffix in get(fmt).all_suffixes()]

    # ---- whole-run files -------------------------------------------------------------------------
    @property
    def pipeline_file(self) -> str:
        return self.path("pipeline.yaml")

    @property
    def summary_file(self) -> str:
        return self.path("summary.json")

    @property
    def digests_file(self) -> str:
        """The digests of its files that the next run may trust (`curate.rundir.digests`)."""
        return self.path("_state", DIGESTS)

    @property
    def manifest_file(self) -> str:
        return self.path("manifest.json")

    @property
    def lock_file(self) -> str:
        """Who is writing the run now (see lock.py)."""
        return self.path("_lock.json")

    # ---- state: stage files, task markers, records -----------------------------------------------
    def state(self, stage: str, *parts: str) -> str:
        return self.path("_state", stage, *parts)

    def stage_file(self, stage: str) -> str:
        return self.path("_state", stage, "stage.json")

    def source_fingerprint(self, stage: str, source: str) -> str | None:
        """The fingerprint of a source's results after `stage` (see `curate.runner.resume`)."""
        return ((self.read_json(self.stage_file(stage)) or {}).get("sources") or {}).get(source, {}).get("fingerprint")

    def phase_key(self, stage: str, phase: str) -> str:
        """What a keyed phase's results were computed from (see `Phase.key`)."""
        return self.path("_state", stage, f"{phase}.key.json")

    def marker(self, stage: str, phase: str, key: str) -> str:
        return self.path("_state", stage, phase, f"{key}.json")

    def markers(self, stage: str) -> list[dict]:
        """Counts of every finished shard task of a stage (its accounting phase), in a stable order."""
        found = [self.read_json(p) for p in fs.glob(self.path("_state", stage, ACCOUNTING, "*", "*.json"))]
        return sorted((m for m in found if m is not None), key=lambda m: (m["source"], m["shard"]))

    def publish(self, stage: str, record) -> None:
        """Write `stage`'s record, keeping the tables it listed (`publish_tables`); a resumed stage publishing the
        same record leaves the file untouched."""
        path = self.path("_state", stage, "record.json")
        before = self.read_json(path) or {}
        tables = before.get("tables")
        value = {"kind": type(record).__name__, **record.to_json(), **({"tables": tables} if tables is not None else {})}
        if before != json.loads(json.dumps(value)):
            self.write_json(path, value)

    def publish_tables(self, stage: str, tables: list[dict]) -> None:
        """List the id-keyed tables `stage` wrote ({name, path, key, columns}) in its record, beside what it published."""
        path = self.path("_state", stage, "record.json")
        value = self.read_json(path) or {}
        if value.get("tables") != json.loads(json.dumps(tables)):  # a resumed step leaves its record untouched
            self.write_json(path, {**value, "tables": tables})

    def tables_of(self, stage: str) -> list[dict]:
        """The id-keyed tables `stage` listed in its record (none when it wrote none)."""
        return (self.read_json(self.path("_state", stage, "record.json")) or {}).get("tables") or []

    def record(self, stage: str, kind: type):
        """The record `stage` published; a missing one is a bug in the stage order, said plainly."""
        value = self.read_json(self.path("_state", stage, "record.json"))
        if value is None or value.pop("kind", None) != kind.__name__:
            raise FileNotFoundError(f"{self.root}: stage '{stage}' has not published its {kind.__name__} yet")
        return kind.from_json(value)

    def find_record(self, stage: str, kind: type):
        """The record `stage` published, or None when it published none of that kind."""
        try:
            return self.record(stage, kind)
        except FileNotFoundError:
            return None

    def read_json(self, path: str):
        try:
            return json.loads(fs.read_bytes(path))
        except FileNotFoundError:
            return None

    def write_json(self, path: str, value) -> None:
        fs.write_bytes(path, json.dumps(value, indent=1, sort_keys=True).encode())
