"""Named MinHash settings of the recipes this project reproduces.

Why presets: the settings that decide what counts as a near-duplicate (unit, n, normalisation,
permutations, bands x rows) are scattered across papers and code; each preset writes one recipe's down
in one place, with where it deviates and why. ``get_preset(name, **changes)`` returns a copy with
changes (for example ``hash="sha1"`` for datasketch-identical signatures).

- ``zyda2``: character 25-grams of the raw text (no normalisation), 128 permutations, 8 bands x 16
  rows, seed 10 (Zyda-2 via NeMo Curator). Zyda-2 hashed shingles with 32-bit MurmurHash3 on GPUs
  (cuDF); its exact values cannot be reproduced off cuDF anyway, so the default shingle hash is our
  fast ``poly64`` (``hash="murmur3"`` gives MurmurHash3_x86_32, ``hash="sha1"`` datasketch's) and the
  permutations are datasketch 2.0's default 32-bit ``affine32`` scheme (1.7x faster than ``legacy``).
- ``zyda1``: word 13-grams after NFC, lowercase, ASCII punctuation removed and whitespace collapsed;
  ``datasketch.MinHash(num_perm=128, seed=1)`` with sha1_hash32 and the pre-2.0 (legacy) permutations;
  LSH threshold 0.4 -> 32 bands x 4 rows. Deviations: no ``ftfy`` (a text-repair step, not a dependency
  here) and a whitespace split instead of NLTK ``word_tokenize`` (see ``shingles.py``).
- ``fineweb``: word 5-grams after datatrove's ``simplify_text`` (lowercase, digits -> 0, datatrove's
  punctuation table -> space, whitespace collapsed, accents stripped; the same text, tested), 14
  buckets x 8 hashes = 112 permutations, seed 1. datatrove hashes with xxhash64 at 64-bit precision and
  tokenises with spaCy; here 32-bit ``poly64`` and a whitespace split.
- ``rpv2``: word 13-grams of RedPajama-V2-normalised words (ASCII punctuation removed, lowercase,
  whitespace collapsed, NFD), sha1_hash32, 128 permutations from ``np.random.RandomState(42)`` (legacy
  scheme: bit for bit RPv2's ``signature_sim*`` values). Bands per threshold: 0.7 -> 14x9, 0.8 -> 9x13,
  0.9 -> 5x25, 1.0 -> 1x128; the preset uses 0.7 (``rpv2_bands(threshold)`` for the others). RPv2 gives
  no signature to documents under 13 words; here they get their whole text as one shingle like every
  preset (``short_docs="skip"`` restores RPv2's behaviour).
"""

from __future__ import annotations

from .shingles import Shingling
from .spec import MinHashSpec

ZYDA1_NORM = ("nfc", "lower", "del_ascii_punct", "collapse_ws")
RPV2_NORM = ("del_ascii_punct", "lower", "collapse_ws", "nfd")
FINEWEB_NORM = ("lower", "digits_to_0", "datatrove_punct_to_space", "collapse_ws", "strip_accents")

RPV2_BANDS = {0.7: (14, 9), 0.8: (9, 13), 0.9: (5, 25), 1.0: (1, 128)}

PRESETS: dict[str, MinHashSpec] = {
    "zyda2": MinHashSpec(Shingling("char", 25), num_perm=128, seed=10, hash="poly64",
                         scheme="affine32", bands=8, rows=16, name="zyda2"),
    "zyda1": MinHashSpec(Shingling("word", 13, ZYDA1_NORM), num_perm=128, seed=1, hash="sha1",
                         scheme="legacy", bands=32, rows=4, name="zyda1"),
    "fineweb": MinHashSpec(Shingling("word", 5, FINEWEB_NORM), num_perm=112, seed=1, hash="poly64",
                           scheme="legacy", bands=14, rows=8, name="fineweb"),
    "rpv2": MinHashSpec(Shingling("word", 13, RPV2_NORM), num_perm=128, seed=42, hash="sha1",
                        scheme="legacy", bands=14, rows=9, name="rpv2"),
}


def get_preset(name: str, **changes) -> MinHashSpec:
    """The preset ``name``, with ``changes`` applied (any MinHashSpec or Shingling field)."""
    try:
        spec = PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown MinHash preset {name!r}; expected one of {sorted(PRESETS)}") from None
    return spec.replace(**changes) if changes else spec


def rpv2_bands(threshold: float) -> tuple[int, int]:
    """RedPajama-V2's (bands, rows) for one of its similarity thresholds (0.7, 0.8, 0.9, 1.0)."""
    try:
        return RPV2_BANDS[threshold]
    except KeyError:
        raise ValueError(f"RedPajama-V2 has bands for thresholds {sorted(RPV2_BANDS)}, not {threshold}") from None
