"""What a step reads of one docs shard, by content: the key that lets an append compute only new work.

A per-shard step (`Stage.PER_SHARD`) gives a docs shard the same results whenever it reads the same bytes for it:
the shard's documents, the ledgers and edits of the steps before it that remove or edit, the side tables of the
steps it needs (its `upstream`) and the records they publish. `ShardInputs.digest` hashes exactly those files,
so a global step such as dedup, recomputed after an append, still lets every later step reuse the shards whose
ledger it left as it was. Of an earlier step's ledger only the removed ids count (`removed_digest`): a later step
reads nothing else of it (`shard.removed_ids`), and its detail names facts about other shards (dedup's cluster
number and kept twin move when a new document joins the cluster). Digests are cached by path, size and
modification time (`curate.rundir.digests`): a file read by several steps of one run is hashed once.
"""

from __future__ import annotations

import hashlib

from curate.config.chain import TABLES
from curate.config.pipeline import canonical_json
from curate.rundir.digests import file_digest, removed_digest
from curate.stages.base import Stage

__all__ = ["ShardInputs", "file_digest", "removed_digest"]


class ShardInputs:
    """`digest(stage, source, shard)`: the content of everything `stage` reads of that docs shard, given the run's
    steps by name."""

    def __init__(self, run, steps: dict[str, Stage]):
        self.run, self.steps = run, steps
        self.parts: dict[tuple[str, str], dict] = {}   # (stage, source) -> its records' digests: a step keys its shards once a run

    def files(self, stage: Stage, source: str, shard: str) -> dict[str, str | None]:
        """Of a step before it that removes or edits: which documents it left (its ledger's ids) and their text (its
        edits); of a step it needs: every file that step wrote for the shard; and what the stage itself names. By
        path (relative to the run), each file's digest."""
        needed = set(stage.upstream.values())
        out = {}
        for step in sorted(set(stage.previous) | needed):
            if step in needed:
                out.update({path: file_digest(path) for path in self.steps[step].shard_outputs(source, shard)})
            else:
                ledger, edits = self.run.ledger(step, source, shard), self.run.edits(step, source, shard)
                out.update({ledger: removed_digest(ledger), edits: file_digest(edits)})
        out.update({path: file_digest(path) for path in stage.shard_reads(source, shard)})
        return {self.run.relative(path): digest for path, digest in out.items()}

    def records(self, stage: Stage, source: str) -> dict[str, str | None]:
        """The records of the steps it needs beyond documents and tables, by content (their bytes), or the part of one
        that the stage says concerns `source` (`Stage.record_part`: pack keys its copies per shard instead, `shard_facts`)."""
        if (stage.name, source) in self.parts:
            return self.parts[(stage.name, source)]
        named = {step for need, step in stage.upstream.items() if need != "docs" and not need.startswith(f"{TABLES}.")}
        out = self.parts[(stage.name, source)] = {}
        for step in sorted(named):
            part = stage.record_part(step, source)
            out[step] = file_digest(self.run.path("_state", step, "record.json")) if part is None else \
                hashlib.sha256(canonical_json(part).encode()).hexdigest()
        return out

    def digest(self, stage: Stage, source: str, shard: str) -> str:
        files = self.files(stage, source, shard)
        # the batch size too: it decides how a step's files for the shard are cut into row groups (their bytes), and a
        # keyed phase (model scores, blocklist scans) keeps its results by this digest alone
        facts = stage.shard_facts(source, shard)   # (only where a stage names some: the other steps' keys stay as they were)
        body = {"files": files, "records": self.records(stage, source), **({"facts": facts} if facts else {}),
                "execution.batch_rows": stage.pipeline.execution["batch_rows"]}
        return hashlib.sha256(canonical_json(body).encode()).hexdigest()
