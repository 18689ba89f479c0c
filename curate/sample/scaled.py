"""Large sample corpora (100k to millions of documents): the sample made in parts, in parallel.

`make_sample` plans its whole corpus in memory on one core: right for the tests' few thousand
documents, too slow and too big for a million. Above `SCALED_FROM` documents it calls `make_scaled`:
the corpus is a set of parts of `PART_DOCS` documents, each a complete sample from a seed of its own
(its planted duplicates, junk, non-English pages and bad records), made by a pool of processes. Each
part's files are renamed `p<part>_<name>` into one tree in the layouts the readers expect, so files,
tasks and every planted rate grow linearly with the documents, as in a real dump. `expected.json` sums
the parts; `truth.json` is left out (its groups are per part, and nothing large reads them); the demo eval set
(`evals/`) is cut from the first part's documents. Same `(docs, seed)`, same bytes.
"""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from . import corpus as C
from .writers import write_dclm, write_dolma, write_fwe, write_zyda
from .evals import make_evals
from .models import make_models

PART_DOCS = 10_000


def make_scaled(dest, docs: int, seed: int = 0, processes: int | None = None) -> dict:
    """Write a corpus of `docs` documents under `dest` in parts; returns the expected counts per source."""
    dest = Path(dest)
    C._clear(dest)
    for stale in dest.glob("_part*"):
        shutil.rmtree(stale)
    parts = [(str(dest), i, min(PART_DOCS, docs - i * PART_DOCS), seed) for i in range(-(-docs // PART_DOCS))]
    with ProcessPoolExecutor(max(1, min(processes or os.cpu_count() or 1, len(parts)))) as pool:
        counts = list(pool.map(_part, parts))
    expected = {source: _sum([c[source] for c in counts]) for source in C.SOURCES}
    make_models(dest, seed)
    C._write_json(dest / "expected.json", expected)
    (dest / C.MARKER).write_bytes(b"")
    return expected


def _part(args) -> dict:
    """Plan and write one part in a folder of its own, then move its files into the tree, renamed."""
    dest, index, docs, seed = args
    dest = Path(dest)
    work = dest / f"_part{index:05d}"
    part_seed = f"{seed}.part{index}"
    plan = C._Planner(docs, part_seed).plan()
    counts = {
        "fwe": write_fwe(work / "fwe", plan["fwe"], C._rng(part_seed, "fwe")),
        "dclm": write_dclm(work / "dclm", plan["dclm"], C._rng(part_seed, "dclm")),
        "zyda": write_zyda(work / "zyda", plan["zyda"], C._rng(part_seed, "zyda"), id_prefix=f"p{index:05d}-"),
        "dolma_cc": write_dolma(work / "dolma_cc", plan["dolma_cc"], plan["dolma_cc_truncated"],
                                   C._rng(part_seed, "dolma_cc")),
    }
    if index == 0:   # the demo eval set, cut from the first part's documents (their ids are kept as they are)
        make_evals(dest, plan, part_seed)
    for path in sorted(p for p in work.rglob("*") if p.is_file()):
        relative = path.relative_to(work)
        target = dest / relative.parent / f"p{index:05d}_{relative.name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
    shutil.rmtree(work)
    return counts


def _sum(counts: list[dict]) -> dict:
    bad: dict[str, int] = {}
    for c in counts:
        for kind, n in c["bad"].items():
            bad[kind] = bad.get(kind, 0) + n
    return {"files": sum(c["files"] for c in counts), "records": sum(c["records"] for c in counts),
            "good": sum(c["good"] for c in counts), "bad": dict(sorted(bad.items()))}


__all__ = ["make_scaled", "PART_DOCS"]
