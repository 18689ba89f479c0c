"""MinHash deduplication.

The signature side (shingles -> signatures -> LSH band keys), one concept per module: ``normalize``
(text steps), ``shingles`` (what a shingle is), ``hashes`` (32-bit shingle hashes), ``permutations``
(datasketch's permutation draws), ``kernel`` (the compiled batch loop), ``signatures`` (the Arrow-in,
numpy-out API), ``bands`` (band keys, band choice, S-curve), ``presets`` (Zyda-2, Zyda-1, FineWeb,
RedPajama-V2 settings).

    from curate.dedup import MinHasher, get_preset
    mh = MinHasher(get_preset("zyda2"), threads=2)
    sigs = mh(table["text"])          # sigs.values (n, 128) uint32, sigs.n_shingles (n,)
    keys = mh.band_keys(sigs)         # (n, 8) uint64; bucket only rows where sigs.valid

The names below are imported lazily, so importing another ``curate.dedup`` module (components,
candidates, ...) does not load numba.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "band_keys": "bands", "candidate_probability": "bands", "choose_bands": "bands",
    "format_s_curve": "bands", "s_curve": "bands", "threshold_of": "bands",
    "HASHES": "hashes", "python_hashfunc": "hashes",
    "NORMALIZE_STEPS": ("normalize", "STEPS"), "normalizer": "normalize",
    "SCHEMES": "permutations", "permutation_params": "permutations",
    "PRESETS": "presets", "get_preset": "presets", "rpv2_bands": "presets",
    "Shingling": "shingles",
    "MinHasher": "signatures", "MinHashSpec": "spec", "Signatures": "signatures",
    "compute_signatures": "signatures", "reference_minhash": "signatures",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    try:
        target = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    module, attr = target if isinstance(target, tuple) else (target, name)
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + __all__)
