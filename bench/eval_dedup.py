"""Dedup quality: precision and recall of the removed set against planted truth, ours vs datasketch.

1. The sample corpus (`curate sample`): every planted near/exact duplicate group with Jaccard >= 0.85
   to its original defines the truth; under the Zyda-2 `cross_source` policy, every member of a group
   from a source ranked below the group's best source should be removed.
2. `../shared/data/minhash_plagiarism` (if present): planted pairs; a pair is found when both ends land
   in one cluster (policy `all`, a single source).
Both are run through `curate run` (preset zyda2) and through datasketch `MinHash` + `MinHashLSH` with the
same shingles, permutations and bands, and the same policy.

    python bench/eval_dedup.py [--docs 4000]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import duckdb
from datasketch import MinHash, MinHashLSH

from curate.cli import main as curate
from curate.sample import make_sample

ROOT = Path(__file__).resolve().parents[1]
PRIORITY = ["fwe", "dclm", "zyda", "dolma_cc"]
PLAGIARISM = ROOT.parent / "shared" / "data" / "minhash_plagiarism"


def run_ours(pipeline: str, out: Path, *sets: str) -> Path:
    args = ["run", pipeline, "--output", str(out), "--inline", "-q"]
    for s in sets:
        args += ["--set", s]
    assert curate(args) == 0
    return out


def datasketch_clusters(docs: list[tuple[str, str, str]], n=25, num_perm=128, seed=10, bands=8, rows=16):
    """(source, id, text) -> list of clusters (lists of indices) via MinHash + MinHashLSH + union-find."""
    lsh = MinHashLSH(num_perm=num_perm, params=(bands, rows))
    sketches = []
    for i, (_, _, text) in enumerate(docs):
        m = MinHash(num_perm=num_perm, seed=seed)
        shingles = {text[j:j + n] for j in range(max(1, len(text) - n + 1))}
        m.update_batch([s.encode("utf-8") for s in shingles])
        lsh.insert(i, m)
        sketches.append(m)
    return lsh_groups(sketches, lsh.query)


def lsh_groups(sketches: list, query) -> list[list[int]]:
    """Clusters (lists of indices, two or more) of the LSH candidates `query(sketch)` finds, joined by union-find."""
    parent = list(range(len(sketches)))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, m in enumerate(sketches):
        for j in query(m):
            a, b = find(i), find(j)
            if a != b:
                parent[max(a, b)] = min(a, b)
    groups = defaultdict(list)
    for i in range(len(sketches)):
        groups[find(i)].append(i)
    return [g for g in groups.values() if len(g) > 1]


def cross_source_removed(clusters, docs) -> set:
    removed = set()
    for members in clusters:
        best = min(PRIORITY.index(docs[i][0]) for i in members)
        removed |= {(docs[i][0], docs[i][1]) for i in members if PRIORITY.index(docs[i][0]) != best}
    return removed


def truth_removed(truth: dict) -> set:
    out = set()
    for group in truth["groups"]:
        members = [m for m in group["members"] if m["variant"] != "loose" and m.get("jaccard_char25", 1.0) >= 0.85]
        if len({m["source"] for m in members}) < 2:
            continue
        best = min(PRIORITY.index(m["source"]) for m in members)
        out |= {(m["source"], m["id"]) for m in members if PRIORITY.index(m["source"]) != best}
    return out


def scores(found: set, truth: set) -> tuple[float, float, int]:
    hit = len(found & truth)
    return (hit / len(found) if found else 1.0), (hit / len(truth) if truth else 1.0), len(found)


def sample_eval(tmp: Path, docs: int) -> list[tuple]:
    sample = tmp / "sample"
    make_sample(sample, docs=docs, seed=0)
    import os
    os.environ["CURATE_SAMPLE"] = str(sample)
    run = run_ours(str(ROOT / "pipelines" / "zyda2.yaml"), tmp / "run")
    ours = set(duckdb.sql(f"SELECT source, id FROM read_parquet('{run}/ledger/dedup/*/*.parquet')").fetchall())
    truth = truth_removed(json.loads((sample / "truth.json").read_text()))
    live = duckdb.sql(f"""SELECT split_part(filename, '/', -2) AS source, id, text
        FROM read_parquet('{run}/docs/*/*.parquet', filename=true, union_by_name=true) ORDER BY source, id""").fetchall()
    theirs = cross_source_removed(datasketch_clusters(live), live)
    return [("sample (cross_source)", "curate zyda2", *scores(ours, truth), len(truth)),
            ("sample (cross_source)", "datasketch 8x16", *scores(theirs, truth), len(truth))]


def plagiarism_eval(tmp: Path, name: str = "articles_2500") -> list[tuple]:
    lines = (PLAGIARISM / f"{name}.train").read_text().splitlines()
    docs = [(line.split(" ", 1)[0], line.split(" ", 1)[1]) for line in lines if " " in line]
    (tmp / "plag").mkdir(exist_ok=True)
    (tmp / "plag" / "docs.jsonl").write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in docs))
    truth = {tuple(sorted(l.split())) for l in (PLAGIARISM / f"{name}.truth").read_text().splitlines() if l.strip()}
    pipeline = tmp / "plag.yaml"
    pipeline.write_text(f"""name: plag
sources:
  plag: {{format: jsonl, paths: '{tmp}/plag/*.jsonl', fields: {{id: id}}}}
stages:
  ingest: {{}}
  minhash: {{preset: zyda2}}
  dedup: {{policy: all}}
""")
    run = run_ours(str(pipeline), tmp / "plag-run")
    clusters = defaultdict(list)
    for cid, doc in duckdb.sql(f"SELECT cluster, id FROM read_parquet('{run}/dedup/clusters/*/*.parquet')").fetchall():
        clusters[cid].append(doc)
    ours = {tuple(sorted((a, b))) for m in clusters.values() for a in m for b in m if a < b}
    theirs_clusters = datasketch_clusters([("plag", i, t) for i, t in docs])
    theirs = {tuple(sorted((docs[a][0], docs[b][0]))) for m in theirs_clusters for a in m for b in m if a < b}
    return [(f"{name} (pairs)", "curate zyda2", *scores(ours, truth), len(truth)),
            (f"{name} (pairs)", "datasketch 8x16", *scores(theirs, truth), len(truth))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=4000)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        rows += sample_eval(Path(tmp), args.docs)
        if PLAGIARISM.is_dir():
            rows += plagiarism_eval(Path(tmp))
    print(f"{'data':28} {'method':18} {'precision':>9} {'recall':>7} {'removed':>8} {'truth':>6}")
    for data, method, p, r, n, t in rows:
        print(f"{data:28} {method:18} {p:9.3f} {r:7.3f} {n:8d} {t:6d}")


if __name__ == "__main__":
    sys.exit(main())
