"""Outputs of steps and sources the pipeline no longer has: removed, with a line saying so.

A step removed from the pipeline or switched off (`enabled: false`), or a run folder reused by a
pipeline with fewer steps or sources, must not leave `scores/`, `quarantine/`, `edits/<step>`, `dedup/clusters`,
a tokenize or pack step's folder or a manifest behind for `curate query` to show as live. A source that left the
pipeline is removed from every stage's outputs by the stages themselves (its fingerprint is gone, see
`resume.settle`); what no step of the pipeline writes any more is removed here, before the run starts.
"""

from __future__ import annotations

import logging

from curate.io import fs
from curate.rundir import RunDir
from curate.run_folders import BY_STEP, RESERVED, TABLES

log = logging.getLogger("curate")
LEGACY_TABLES = ("signals", "scores", "dual_use")


def remove_stale(run: RunDir, pipeline, registry) -> None:
    steps = {s.name for s in pipeline.stages} | {"kept"}
    kinds = {s.kind for s in pipeline.stages}
    gone: set[str] = set()
    for kind in ("_state", "ledger", "_work", "edits"):
        for path in fs.glob(run.path(kind, "*")):
            name = _name(path)
            if name not in steps:
                if name not in gone:
                    log.info("removing outputs of stage '%s', which the pipeline no longer has (or has switched off)", name)
                    gone.add(name)
                fs.remove(path)
                if kind == "_state" and name not in RESERVED and fs.exists(run.path(name)):
                    fs.remove(run.path(name))   # the step's own tables, RUN/<step>/
        if kind == "edits" and fs.exists(run.path(kind)) and not fs.glob(run.path(kind, "*")):
            fs.remove(run.path(kind))   # no editing step left: no empty edits/ for a reader to wonder about
    for legacy in LEGACY_TABLES:   # fixed folders of earlier versions; tables now live under their step's name
        if legacy not in steps and fs.exists(run.path(legacy)):
            log.info("removing %s/: step tables now live in RUN/<step>/ (this run was made by an earlier version)", legacy)
            fs.remove(run.path(legacy))
    for path in fs.glob(run.path("*", "clusters")):
        owner = path.rstrip("/").rsplit("/", 2)[-2]
        if owner not in steps:
            log.info("removing %s/clusters: the pipeline has no step '%s' any more", owner, owner)
            fs.remove(path)
    written = {"kept", *(t for s in pipeline.stages for t in registry[s.kind].tables(s.name))}
    parts = [f"{table}/{_name(p)}" for table in BY_STEP for p in fs.glob(run.path(table, "*"))]
    for table in (*TABLES, *parts):
        if table in BY_STEP and any(t.startswith(f"{table}/") for t in written):
            continue
        if table not in written and fs.exists(run.path(*table.split("/"))):
            log.info("removing %s/: no step of the pipeline writes it any more", table)
            fs.remove(run.path(*table.split("/")))
    if "manifest" not in kinds and fs.exists(run.manifest_file):
        log.info("removing manifest.json: the pipeline has no manifest step any more")
        fs.remove(run.manifest_file)


def _name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]
