"""What a MinHash signature and its band keys depend on, in one frozen value: the shingling, the
permutations (`num_perm`, `seed`, `scheme`), the 32-bit shingle hash and the LSH bands x rows. Presets
(presets.py) are named values of it; signatures.py computes with it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from .hashes import HASHES
from .permutations import SCHEMES
from .shingles import Shingling


@dataclass(frozen=True)
class MinHashSpec:
    """Everything a signature and its band keys depend on."""

    shingling: Shingling = field(default_factory=Shingling)
    num_perm: int = 128
    seed: int = 1
    hash: str = "poly64"
    hash_seed: int = 0
    scheme: str = "legacy"
    bands: int = 8
    rows: int = 16
    name: str = ""

    def __post_init__(self):
        if isinstance(self.shingling, dict):
            object.__setattr__(self, "shingling", Shingling(**self.shingling))
        if self.hash not in HASHES:
            raise ValueError(f"shingle hash must be one of {HASHES}, got {self.hash!r}")
        if self.scheme not in SCHEMES:
            raise ValueError(f"permutation scheme must be one of {SCHEMES}, got {self.scheme!r}")
        for key in ("num_perm", "bands", "rows"):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{key} must be a positive integer, got {v!r}")
        if not 0 <= self.seed < 2**32:
            raise ValueError(f"seed must be in [0, 2^32), got {self.seed!r}")
        if not 0 <= self.hash_seed < 2**32:
            raise ValueError(f"hash_seed must be in [0, 2^32), got {self.hash_seed!r}")
        if self.hash == "sha1" and self.hash_seed:
            raise ValueError("hash_seed has no effect with hash='sha1' (datasketch's sha1_hash32 is unseeded)")
        if self.bands * self.rows > self.num_perm:
            raise ValueError(f"bands x rows = {self.bands} x {self.rows} = {self.bands * self.rows} "
                             f"exceeds num_perm = {self.num_perm}")

    def replace(self, **changes) -> "MinHashSpec":
        """A copy with some fields changed; shingling fields (unit, n, normalize, short_docs) may be given
        directly."""
        sh = {k: changes.pop(k) for k in ("unit", "n", "normalize", "short_docs") if k in changes}
        if sh:
            changes["shingling"] = dataclasses.replace(self.shingling, **sh)
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """A flat, JSON-able form (for configs, fingerprints and side-table metadata)."""
        d = dataclasses.asdict(self)
        sh = d.pop("shingling")
        sh["normalize"] = list(sh["normalize"])
        return {**sh, **d}

    @classmethod
    def from_dict(cls, d: dict) -> "MinHashSpec":
        """The inverse of ``to_dict``; shingling fields may be flat or under ``shingling``."""
        d = dict(d)
        sh = dict(d.pop("shingling", {}) or {})
        for k in ("unit", "n", "normalize", "short_docs"):
            if k in d:
                sh[k] = d.pop(k)
        if "normalize" in sh:
            sh["normalize"] = tuple(sh["normalize"])
        unknown = set(d) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ValueError(f"unknown MinHash setting(s) {sorted(unknown)}")
        return cls(shingling=Shingling(**sh), **d)

    def datasketch_compatible(self) -> "MinHashSpec":
        """The same spec with datasketch's default shingle hash (sha1_hash32): slower, but signatures
        equal ``datasketch.MinHash(num_perm, seed, scheme=scheme)`` fed the same shingles."""
        return self.replace(hash="sha1", hash_seed=0)
