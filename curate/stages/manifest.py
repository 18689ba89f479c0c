"""The manifest stage: `RUN/manifest.json`, what a trainer needs to trust the outputs.

Runs last (after the kept documents are written): it gathers the records of the steps that provide the
tokens, the packed outputs and the mixture (its needs), what every step's facets add (the models they ran,
`Facets.manifest`), the accounting and the list of output files (the token files, kept/, ledger/, edits/ and pipeline.yaml), and hands them to
`curate.manifest.body`, which builds, writes and verifies the manifest. It names no other stage kind.
"""

from __future__ import annotations

import logging
import os
import time

from curate.io import fs
from curate.manifest.body import manifest_body, write_and_verify
from curate.rundir import MixRecord, PackRecord, TokenizerRecord, aggregate, digests
from curate.stages.base import Stage
from curate.stages.phase import Phase, Task
from curate.stages.registry import STAGES, stage

log = logging.getLogger("curate")


@stage("manifest")
class ManifestStage(Stage):
    NEEDS = ("tokens", "packed")
    USES = ("mix",)
    FINAL = True
    GLOBAL = True
    PIPELINE_READS = ("resolved",)  # it writes the resolved pipeline and hashes pipeline.yaml
    VERSION = 2   # 2: it lists the editing steps' span files (RUN/edits/), which later steps and runs apply
    RUN_FILES = ("manifest.json",)

    def plan(self) -> list[Task]:
        return [Task("manifest", "the run's outputs", None)]

    def execute(self, tasks, run_phase) -> None:
        run_phase(Phase("write", tasks, self.write))

    def models(self) -> dict:
        """Every model the run's steps ran, as their facets list them (`<step>.<model>`, or the step's name)."""
        out = {}
        for step in self.pipeline.stages:
            if step.name != self.name:
                out.update(STAGES[step.kind].FACETS.manifest(self.run, step.name).get("models", {}))
        return out

    def write(self, _payload) -> dict:
        tok = self.run.record(self.upstream["tokens"], TokenizerRecord)
        pack = self.run.record(self.upstream["packed"], PackRecord)
        plan = self.run.record(self.upstream["mix"], MixRecord).plan if "mix" in self.upstream else None
        files = [f for o in pack.outputs.values() for f in o["files"]]
        for pattern in (self.run.table_glob("kept"), self.run.ledger_glob(), self.run.edits_glob()):
            files += [self.run.relative(p) for p in fs.glob(pattern)]
        files.append(self.run.relative(self.run.pipeline_file))
        steps = [s.name for s in self.pipeline.stages if s.name != self.name] + ["kept"]
        accounting = [{k: r[k] for k in ("stage", "source", "in", "kept", "removed")}
                      for r in aggregate([(s, self.run.markers(s)) for s in steps], self.pipeline.priority, {})]
        pipeline = {"name": self.pipeline.name, "hash": self.pipeline.hash(), "resolved": self.pipeline.resolved}
        body = manifest_body(pipeline, tok, pack, plan, self.pipeline.priority, accounting, self.models(), self.name)
        files = sorted(set(files))
        stats, known = self.kept_digests(files)
        manifest = write_and_verify(self.run.root, body, files, known)
        for entry in manifest["files"]:   # for the next run: what was read now, it need not read again
            if entry["path"] in stats and entry["path"] not in known:
                digests.remember(*stats[entry["path"]], entry["sha256"])
        if known:
            log.info("[%s] %s of %s files known by their kept digests, %s hashed", self.name, f"{len(known):,}",
                     f"{len(files):,}", f"{len(files) - len(known):,}")
        return {"in": 0, "files": len(files)}

    def kept_digests(self, files: list[str]) -> tuple[dict, dict]:
        """Of a local run folder's `files`: each one's path, `stat` now and when it was taken, and the digests this process
        has for files unchanged since they were hashed, by an earlier run's manifest or any step's keys
        (`curate.rundir.digests`). An append's manifest then hashes only the files the append wrote (an fwe dump: fwe's
        merged tokens and the rewritten shards' kept and ledger files); the verify after it still reads every file.
        (On Ray this task's process hands back what it hashed to its own digests, which the driver does not keep.)"""
        if "://" in self.run.root:   # (the kept digests are of plain local paths only)
            return {}, {}
        stats, known = {}, {}
        for rel in files:
            path = self.run.path(rel)
            try:
                st = os.stat(path)
            except OSError:
                continue   # (write_manifest names it: missing)
            stats[rel] = (path, st, time.time_ns())
            if (digest := digests.known(path, st)) is not None:
                known[rel] = (st.st_size, digest)
        return stats, known
