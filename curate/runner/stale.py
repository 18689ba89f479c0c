"""Outputs of steps and sources the pipeline no longer has: removed, with a line saying so.

A step removed from the pipeline or switched off (`enabled: false`), or a run folder reused by a
pipeline with fewer steps or sources, must not leave `quarantine/`, `edits/<step>`, `<step>/clusters`,
a step's own folder or a run-level file such as the manifest behind for `curate query` to show as live. A source
that left the pipeline is removed from every stage's outputs by the stages themselves (its fingerprint is gone,
see `resume.settle`); what no step of the pipeline writes any more is removed here, before the run starts.

Which run-level files a kind writes, its class says (`Stage.RUN_FILES`; `Stage.VIEW`, the folder earlier versions
wrote its table to). The classes asked are those of the pipeline's steps and of the steps the run had before (its
pipeline.yaml), so a run imports no stage module that neither pipeline names (registry.py loads them lazily).
"""
from __future__ import annotations

import logging

import yaml

from curate.io import fs
from curate.rundir import RunDir
from curate.rundir.layout import DIGESTS
from curate.run_folders import BY_STEP, RESERVED, TABLES

log = logging.getLogger("curate")


def remove_stale(run: RunDir, pipeline, registry) -> None:
    steps = {s.name for s in pipeline.stages} | {"kept"}
    now = {registry[s.kind] for s in pipeline.stages}
    before = _earlier_kinds(run, registry) - now
    gone: set[str] = set()
    for kind in ("_state", "ledger", "_work", "edits"):
        for path in fs.glob(run.path(kind, "*")):
            name = _name(path)
            if name not in steps and not (kind == "_state" and name == DIGESTS):
                if name not in gone:
                    log.info("removing outputs of stage '%s', which the pipeline no longer has (or has switched off)", name)
                    gone.add(name)
                fs.remove(path)
                if kind == "_state" and name not in RESERVED and fs.exists(run.path(name)):
                    fs.remove(run.path(name))   # the step's own tables, RUN/<step>/
        if kind == "edits" and fs.exists(run.path(kind)) and not fs.glob(run.path(kind, "*")):
            fs.remove(run.path(kind))   # no editing step left: no empty edits/ for a reader to wonder about
    for cls in sorted(now | before, key=lambda c: c.KIND):   # tables now live under their step's name
        legacy = cls.VIEW
        if legacy and legacy not in steps and legacy not in RESERVED and fs.exists(run.path(legacy)):
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
    written = {f for cls in now for f in cls.RUN_FILES}
    for cls in sorted(before, key=lambda c: c.KIND):
        for name in cls.RUN_FILES:
            if name not in written and fs.exists(run.path(*name.split("/"))):
                log.info("removing %s: the pipeline has no %s step any more", name, cls.KIND)
                fs.remove(run.path(*name.split("/")))


def _earlier_kinds(run: RunDir, registry) -> set[type]:
    """The classes of the steps the run's previous pipeline had (its RUN/pipeline.yaml), those still known."""
    try:
        resolved = yaml.safe_load(fs.read_bytes(run.pipeline_file)) if fs.exists(run.pipeline_file) else None
    except (OSError, yaml.YAMLError):
        return set()
    steps = resolved.get("stages") if isinstance(resolved, dict) else None
    kinds = {(v.get("use") if isinstance(v, dict) else None) or k for k, v in steps.items()} if isinstance(steps, dict) else set()
    return {registry[k] for k in kinds if isinstance(k, str) and k in registry}


def _name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]
