"""The manifest stage: `RUN/manifest.json`, what a trainer needs to trust the outputs.

Runs last (after the kept documents are written): it gathers the records of the steps that provide the
tokens, the packed outputs and the mixture (its needs), what every step's facets add (the models they ran,
`Facets.manifest`), the accounting and the list of output files (the token files, kept/, ledger/, edits/ and pipeline.yaml), and hands them to
`curate.manifest.body`, which builds, writes and verifies the manifest. It names no other stage kind.
"""

from __future__ import annotations

from curate.io import fs
from curate.manifest.body import manifest_body, write_and_verify
from curate.rundir import MixRecord, PackRecord, TokenizerRecord, aggregate
from curate.stages.base import Stage
from curate.stages.phase import Phase, Task
from curate.stages.registry import STAGES, stage


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
        write_and_verify(self.run.root, body, sorted(set(files)))
        return {"in": 0, "files": len(set(files))}
