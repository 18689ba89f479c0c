"""What a step reads of one docs shard, by content: the key that lets an append compute only new work.

A per-shard step (`Stage.PER_SHARD`) gives a docs shard the same results whenever it reads the same bytes for it:
the shard's documents, the ledgers and edits of the steps before it that remove or edit, the side tables of the
steps it needs (its `upstream`) and the records they publish. `shard_digest` hashes exactly those files, so a
global step such as dedup, recomputed after an append, still lets every later step reuse the shards whose
ledger it left byte for byte as it was. Digests are cached by path, size and modification time: a file read
by several steps of one run is hashed once.
"""

from __future__ import annotations

import hashlib
import os

from curate.config.chain import TABLES
from curate.config.pipeline import canonical_json
from curate.io import fs
from curate.stages.base import Stage

_cache: dict[tuple, str] = {}


def file_digest(path: str) -> str | None:
    """sha256 of a file's bytes, or None when it does not exist."""
    local = "://" not in path
    if local:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        key = (path, st.st_size, st.st_mtime_ns, st.st_ino)
        if key in _cache:
            return _cache[key]
    elif not fs.exists(path):
        return None
    digest = hashlib.sha256()
    with fs.open_input(path) as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    if local:
        _cache[key] = digest.hexdigest()
    return digest.hexdigest()


class ShardInputs:
    """`digest(stage, source, shard)`: the content of everything `stage` reads of that docs shard, given the run's
    steps by name."""

    def __init__(self, run, steps: dict[str, Stage]):
        self.run, self.steps = run, steps

    def files(self, stage: Stage, source: str, shard: str) -> list[str]:
        """Of a step before it that removes or edits: which documents it left and their text (its ledger, its edits);
        of a step it needs: every file that step wrote for the shard; and what the stage itself names."""
        needed = set(stage.upstream.values())
        out = []
        for step in sorted(set(stage.previous) | needed):
            if step in needed:
                out += self.steps[step].shard_outputs(source, shard)
            else:
                out += [self.run.ledger(step, source, shard), self.run.edits(step, source, shard)]
        return out + stage.shard_reads(source, shard)

    def records(self, stage: Stage) -> dict[str, str | None]:
        """The records of the steps it needs beyond documents and tables (a mix plan for tokenize), by content:
        they are read for every shard alike."""
        named = {step for need, step in stage.upstream.items() if need != "docs" and not need.startswith(f"{TABLES}.")}
        return {step: file_digest(self.run.path("_state", step, "record.json")) for step in sorted(named)}

    def digest(self, stage: Stage, source: str, shard: str) -> str:
        files = {self.run.relative(path): file_digest(path) for path in self.files(stage, source, shard)}
        # the batch size too: it decides how a step's files for the shard are cut into row groups (their bytes), and a
        # keyed phase (model scores, blocklist scans) keeps its results by this digest alone
        body = {"files": files, "records": self.records(stage), "execution.batch_rows": stage.pipeline.execution["batch_rows"]}
        return hashlib.sha256(canonical_json(body).encode()).hexdigest()


def clear_cache() -> None:
    _cache.clear()
