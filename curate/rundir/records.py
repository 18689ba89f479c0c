"""What a stage publishes for the steps after it: small, typed, JSON in `RUN/_state/<stage>/record.json`.

A later step reads the record of the step that provides what it needs (see `Stage.NEEDS`); it never
builds or imports that stage.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from curate.common.record import Record


@dataclass(frozen=True)
class IngestRecord(Record):
    """The docs shards, in plan order: every later shard stage plans its tasks from these."""

    shards: list = field(default_factory=list)  # [{"source", "shard", "input"}]

    def pairs(self) -> list[tuple[str, str]]:
        return [(s["source"], s["shard"]) for s in self.shards]


@dataclass(frozen=True)
class MinhashRecord(Record):
    """Where the band keys are, in how many hash partitions, and how documents were shingled."""

    bands: str          # RUN/_work/<minhash>/bands: p=<partition>/<shard tag>.parquet rows (band, key, node, hi)
    partitions: int
    shingling: dict     # curate.dedup.shingles.Shingling fields
    tie_break: str
    signatures: str = ""  # RUN/_work/<minhash>/signatures: <source>/<shard>.arrow rows (row, length, sig)


@dataclass(frozen=True)
class DedupRecord(Record):
    """Per source: documents in, removed, share removed, largest clusters, alarms raised; the alarm lines."""

    sources: dict
    alarms: list
    max_removed_share: float
    max_cluster: int
    frozen: dict | None = None   # frozen mode: {"from", "documents", "found", "removed_for_frozen"}


@dataclass(frozen=True)
class MixRecord(Record):
    """The mixture plan: per source, available and chosen tokens and epochs; the seed of the copies."""

    plan: dict


@dataclass(frozen=True)
class TokenizerRecord(Record):
    spec: str
    name: str
    identity: str
    vocab_size: int
    eos_id: int | None
    bos_id: int | None   # None unless BOS tokens are added
    eos: bool


@dataclass(frozen=True)
class PackRecord(Record):
    """What was packed, per source: the prefix, the files, documents, tokens, sequences, documents split."""

    seq_len: int
    method: str
    formats: list
    outputs: dict
    tokens: str = ""   # the tokenize step whose token documents it packed ("": recorded by an earlier version)


@dataclass(frozen=True)
class ClassifyRecord(Record):
    """The models a classify step ran: kind, path, whether a stand-in replaced the real one, and its cost."""

    models: dict


@dataclass(frozen=True)
class DualUseRecord(Record):
    """What a dual_use step's blocklist and classifier cost, and which model it ran."""

    costs: dict


@dataclass(frozen=True)
class EditsRecord(Record):
    """A text-editing step's record (pii): the kinds it looked for and where its edits are (RUN/edits/<step>/)."""

    kinds: list = field(default_factory=list)
    edits: str = ""
