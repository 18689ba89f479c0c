"""MinHash deduplication, the signature side: shingles -> signatures -> LSH band keys.

One concept per module: ``normalize`` (text steps), ``shingles`` (what a shingle is), ``hashes``
(32-bit shingle hashes), ``permutations`` (datasketch's permutation draws), ``kernel`` (the compiled
batch loop), ``signatures`` (the Arrow-in, numpy-out API), ``bands`` (band keys, band choice,
S-curve), ``presets`` (Zyda-2, Zyda-1, FineWeb, RedPajama-V2 settings).

    from curate.dedup import MinHasher, get_preset
    mh = MinHasher(get_preset("zyda2"), threads=2)
    sigs = mh(table["text"])          # sigs.values (n, 128) uint32, sigs.n_shingles (n,)
    keys = mh.band_keys(sigs)         # (n, 8) uint64; bucket only rows where sigs.valid
"""

from .bands import band_keys, candidate_probability, choose_bands, format_s_curve, s_curve, threshold_of
from .hashes import HASHES, python_hashfunc
from .normalize import STEPS as NORMALIZE_STEPS
from .normalize import normalizer
from .permutations import SCHEMES, permutations
from .presets import PRESETS, get_preset, rpv2_bands
from .shingles import Shingling
from .signatures import MinHasher, MinHashSpec, Signatures, compute_signatures, reference_minhash

__all__ = [
    "HASHES", "NORMALIZE_STEPS", "PRESETS", "SCHEMES",
    "MinHashSpec", "MinHasher", "Shingling", "Signatures",
    "band_keys", "candidate_probability", "choose_bands", "compute_signatures", "format_s_curve",
    "get_preset", "normalizer", "permutations", "python_hashfunc", "reference_minhash", "rpv2_bands",
    "s_curve", "threshold_of",
]
