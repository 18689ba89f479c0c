"""The manifest stage: `RUN/manifest.json`, what a trainer needs to trust the outputs.

Runs last (after the kept documents are written): every output file with its size and sha256, the
mixture plan and what was really written per source, the Megatron `--data-path` string, the
tokenizer's identity, `seq_len` and packing statistics, per-stage accounting from the ledger, the
resolved pipeline and its hash, and package versions. It is validated against
`manifests/manifest.schema.json`, then verified by re-hashing.
"""

from __future__ import annotations

import time

from curate.errors import CurateError
from curate.io import fs
from curate.runner.tasks import Task
from curate.stages.base import Stage


class ManifestStage(Stage):
    OPTIONS = {}

    def owned_paths(self) -> list[str]:
        return [self.run.path("manifest.json"), *super().owned_paths()]

    def plan(self) -> list[Task]:
        return [Task(self.name, "_run", "manifest", "the run's outputs")]

    def _stage_of(self, kind: str):
        from curate.stages import STAGES

        names = [s.name for s in self.pipeline.stages if s.kind == kind]
        if not names:
            return None
        cfg = self.pipeline.stage(names[-1])
        return STAGES[kind](cfg.name, cfg.options, self.pipeline, self.run, [])

    def run_task(self, task: Task) -> dict:
        from curate.manifest.build import write_manifest
        from curate.manifest.verify import verify
        from curate.runner.summary import aggregate

        started = time.monotonic()
        pack, tokenize, mix = self._stage_of("pack"), self._stage_of("tokenize"), self._stage_of("mix")
        if pack is None or tokenize is None:
            raise CurateError(f"stage '{self.name}' needs tokenize and pack stages before it")
        tok = tokenize.tokenizer
        packed = self.run.markers(pack.name)
        tokenized = self.run.markers(tokenize.name)
        plan = self.run.read_json(self.run.path(mix.name, "plan.json")) if mix else None
        outputs, files = {}, []
        for source in self.pipeline.priority:
            mine = [m for m in packed if m["source"] == source]
            if not mine:
                continue
            outputs[source] = {"prefix": f"tokens/{source}", "documents": sum(m["in"] for m in mine),
                               "tokens": sum(m["tokens"] for m in mine), "sequences": sum(m["sequences"] for m in mine)}
            files += [f"tokens/{source}.bin", f"tokens/{source}.idx"]
            if "datatrove" in pack.options["formats"]:
                files += [f"tokens/{source}.ds", f"tokens/{source}.ds.index", f"tokens/{source}.ds.loss", f"tokens/{source}.ds.metadata"]
        total_tokens = sum(o["tokens"] for o in outputs.values()) or 1
        data_path = " ".join(f"{o['tokens'] / total_tokens:.6f} {o['prefix']}" for o in outputs.values())
        seq_len = pack.options["seq_len"]
        sequences = sum(o["sequences"] for o in outputs.values())
        split = sum(m["docs_split"] for m in packed)
        docs_packed = sum(m["in"] for m in packed)
        mixture_sources = {}
        for source, out in outputs.items():
            p = (plan or {}).get("sources", {}).get(source, {})
            mixture_sources[source] = {"weight": p.get("weight"), "available_tokens": p.get("available_tokens", out["tokens"]),
                                       "chosen_tokens": p.get("chosen_tokens", out["tokens"]), "epochs": p.get("epochs", 1.0),
                                       "documents": sum(m["in"] for m in tokenized if m["source"] == source),
                                       "tokens": out["tokens"]}
        for kind in ("kept", "ledger"):
            files += [p[len(self.run.root.rstrip('/')) + 1:] for p in fs.glob(self.run.path(kind, "**", "*.parquet"))]
        files.append("pipeline.yaml")
        accounting = [{k: r[k] for k in ("stage", "source", "in", "kept", "removed")}
                      for r in aggregate([(s.name, self.run.markers(s.name)) for s in self.pipeline.stages
                                          if s.kind != "manifest"] + [("kept", self.run.markers("kept"))],
                                         self.pipeline.priority, {})]
        body = {
            "pipeline": {"name": self.pipeline.name, "hash": self.pipeline.hash(), "resolved": self.pipeline.resolved},
            "tokenizer": {"name": tok.name, "identity": tok.identity(), "vocab_size": tok.vocab_size, "eos_id": tok.eos_id,
                          "bos_id": tok.bos_id if tokenize.options["bos"] else None},
            "seq_len": seq_len,
            "packing": {"method": pack.options["method"], "density": total_tokens / (sequences * seq_len) if sequences else 0.0,
                        "split_share": split / docs_packed if docs_packed else 0.0, "sequences": sequences},
            "mixture": {"mode": plan["mode"] if plan else "none", "seed": plan["seed"] if plan else 0,
                        "total_tokens": plan.get("total_tokens") if plan else None, "sources": mixture_sources},
            "megatron_data_path": data_path,
            "outputs": outputs,
            "accounting": accounting,
        }
        write_manifest(self.run.root, body, sorted(set(files)))
        problems = verify(self.run.root)
        if problems:
            raise CurateError("the manifest does not verify:\n" + "\n".join(problems[:20]))
        return self.finish_task(task, started, 0, {})
