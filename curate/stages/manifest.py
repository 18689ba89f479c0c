"""The manifest stage: `RUN/manifest.json`, what a trainer needs to trust the outputs.

Runs last (after the kept documents are written), from the records of the tokenize, pack and mix
steps: every output file with its size and sha256, the mixture plan and what was really written per
source, the Megatron `--data-path` string, the tokenizer's identity, `seq_len` and packing statistics,
per-stage accounting from the ledger, the resolved pipeline and its hash, and package versions. It is
validated against `manifests/manifest.schema.json`, then verified by re-hashing.
"""

from __future__ import annotations

import logging

from curate.errors import CurateError
from curate.io import fs
from curate.rundir import ClassifyRecord, DualUseRecord, MixRecord, PackRecord, TokenizerRecord, aggregate
from curate.stages.base import Stage
from curate.stages.phase import Phase, Task
from curate.stages.registry import stage
from curate.tokens.repetition import effective_tokens

log = logging.getLogger("curate")


@stage("manifest")
class ManifestStage(Stage):
    NEEDS = ("tokens", "packed")
    USES = ("mix",)
    FINAL = True
    GLOBAL = True
    PIPELINE_READS = ("resolved",)  # it writes the resolved pipeline and hashes pipeline.yaml

    def owned_paths(self) -> list[str]:
        return [self.run.manifest_file, *super().owned_paths()]

    def plan(self) -> list[Task]:
        return [Task("manifest", "the run's outputs", None)]

    def execute(self, tasks, run_phase) -> None:
        run_phase(Phase("write", tasks, self.write))

    def models(self) -> dict:
        """Every model the run's classify and dual_use steps ran, from their records (`<step>.<model>`)."""
        out = {}
        for step in (s.name for s in self.pipeline.stages):
            if (record := self.run.find_record(step, ClassifyRecord)) is not None:
                out.update({f"{step}.{name}": {"stage": step, **m} for name, m in record.models.items()})
            if (record := self.run.find_record(step, DualUseRecord)) is not None and record.costs["model"]:
                docs, seconds = record.costs["classifier_documents"], record.costs["classifier_seconds"]
                per_doc = seconds / docs if docs else 0.0
                out[step] = {"stage": step, **record.costs["model"], "documents": docs, "seconds": seconds, "device": record.costs["device"],
                             "seconds_per_1000": round(per_doc * 1000, 4), "hours_per_billion": round(per_doc * 1e9 / 3600, 1)}
        return out

    def write(self, _payload) -> dict:
        from curate.manifest.build import write_manifest
        from curate.manifest.verify import verify

        tok = self.run.record(self.upstream["tokens"], TokenizerRecord)
        pack = self.run.record(self.upstream["packed"], PackRecord)
        plan = self.run.record(self.upstream["mix"], MixRecord).plan if "mix" in self.upstream else None
        outputs = {s: {k: pack.outputs[s][k] for k in ("prefix", "documents", "tokens", "sequences")}
                   for s in self.pipeline.priority if s in pack.outputs}  # records are JSON with sorted keys
        files = [f for o in pack.outputs.values() for f in o["files"]]
        total_tokens = sum(o["tokens"] for o in outputs.values()) or 1
        sequences = sum(o["sequences"] for o in outputs.values())
        split = sum(o["docs_split"] for o in pack.outputs.values())
        docs_packed = sum(o["documents"] for o in outputs.values())
        mixture_sources = {}
        for source, out in outputs.items():
            p = (plan or {}).get("sources", {}).get(source, {})
            available, chosen = p.get("available_tokens", out["tokens"]), p.get("chosen_tokens", out["tokens"])
            mixture_sources[source] = {"weight": p.get("weight"), "available_tokens": available, "chosen_tokens": chosen,
                                       "epochs": p.get("epochs", 1.0),  # the plan's worth in fresh tokens (no mix: all fresh)
                                       "effective_tokens": p.get("effective_tokens", effective_tokens(chosen, available)),
                                       "documents": out["documents"], "tokens": out["tokens"]}
        for pattern in (self.run.table_glob("kept"), self.run.ledger_glob()):
            files += [self.run.relative(p) for p in fs.glob(pattern)]
        files.append(self.run.relative(self.run.pipeline_file))
        steps = [s.name for s in self.pipeline.stages if s.name != self.name] + ["kept"]
        accounting = [{k: r[k] for k in ("stage", "source", "in", "kept", "removed")}
                      for r in aggregate([(s, self.run.markers(s)) for s in steps], self.pipeline.priority, {})]
        body = {
            "pipeline": {"name": self.pipeline.name, "hash": self.pipeline.hash(), "resolved": self.pipeline.resolved},
            "tokenizer": {"name": tok.name, "identity": tok.identity, "vocab_size": tok.vocab_size, "eos_id": tok.eos_id,
                          "bos_id": tok.bos_id},
            "seq_len": pack.seq_len,
            "packing": {"method": pack.method, "density": total_tokens / (sequences * pack.seq_len) if sequences else 0.0,
                        "split_share": split / docs_packed if docs_packed else 0.0, "sequences": sequences},
            "mixture": {"mode": plan["mode"] if plan else "none", "seed": plan["seed"] if plan else 0,
                        "total_tokens": plan.get("total_tokens") if plan else None, "sources": mixture_sources,
                        "effective_tokens": sum(m["effective_tokens"] for m in mixture_sources.values()),
                        **({"allow_epochs": plan["allow_epochs"]} if plan and "allow_epochs" in plan else {})},
            "megatron_data_path": " ".join(f"{o['tokens'] / total_tokens:.6f} {o['prefix']}" for o in outputs.values()
                                           if o["tokens"]),
            "outputs": outputs,
            "accounting": accounting,
        }
        if models := self.models():
            body["models"] = models
        if empty := [s for s, o in outputs.items() if not o["tokens"]]:
            body["empty_sources"] = empty  # their .bin is empty: Megatron cannot map it, so the data path leaves them out
            log.warning("%s: no tokens from %s: left out of megatron_data_path", self.name, ", ".join(empty))
        if len(empty) == len(outputs):
            raise CurateError("no tokens were written: every source is empty after the filters and the mixture")
        write_manifest(self.run.root, body, sorted(set(files)))
        problems = verify(self.run.root)
        if problems:
            raise CurateError("the manifest does not verify:\n" + "\n".join(problems[:20]))
        return {"in": 0, "files": len(set(files))}
