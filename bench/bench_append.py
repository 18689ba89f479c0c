"""What an append costs: the zyda2 pipeline from scratch, a no-op re-run, then a new FineWeb-Edu dump of about 10%
more documents (half of them copies of documents already there, planted duplicates), against a fresh run over the
union, which the appended run must equal byte for byte (compare_runs.py). Prints the wall times, the reuse line of
every step (`[signals] 40 of 44 shards reused, 4 new`) and the comparison.

One append is one sample of a noisy quantity (on a small VM, a step that reads what an earlier run wrote takes
what the page cache kept of it). `--repeat N` measures N rounds, each alike: a run from scratch (without the dump),
a no-op re-run, the page cache dropped (when this process may: as days later, everything read back from disk), a
no-op run, then the append on that same run, as a user appends to their own run. A round's share is its append's
time over its own from-scratch run's; the result is the median share. (Rounds once appended to copies of one run:
a copy's files are new inodes, so everything trusted by its `stat`, the kept digests and dedup's kept band rows,
was read again, and each copy's append cost 1-3 s more than the append on the run itself.) Each round's run is
moved aside and deleted at the end: no run here follows the deletion of gigabytes (on a disk mounted with `discard`,
every freed block is trimmed). The last round's run is the one compared. A step's time is its wall time less the
seconds it compiled its kernels (a machine's first run compiles them, ~18 s).

    python bench/bench_append.py --docs 8000
    python bench/bench_append.py --docs 1000000 --repeat 3 --keep /tmp/append
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from compare_runs import compare
from curate.sample import make_sample

ROOT = Path(__file__).resolve().parent.parent
DUMP = Path("fwe") / "data" / "CC-MAIN-2099-99"   # the appended dump's folder, in the sample


def run(sample: Path, out: Path, label: str) -> tuple[float, list[str], dict[str, float]]:
    """One run of the pipeline; its log (every phase's time) is kept beside the run folder as `<label>.log`."""
    env = {**os.environ, "CURATE_SAMPLE": str(sample), "CURATE_OUTPUT": str(out)}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "curate", "run", str(ROOT / "pipelines" / "zyda2.yaml"), "--output", str(out),
                           "--inline", "--no-report"], check=True, env=env, capture_output=True, text=True)
    wall = time.monotonic() - started
    (out.parent / f"{label}.log").write_text(done.stdout + done.stderr)
    reuse = r"\] [\d,]+ of [\d,]+ (shards|partitions|pairs|components) reused|split again"
    lines = [line for line in (done.stdout + done.stderr).splitlines() if re.search(reuse, line)]
    steps: dict[str, float] = {}
    for row in json.loads((out / "summary.json").read_text()):   # a step's wall time is on each of its sources' rows
        # less the seconds it compiled (or loaded) its kernels: a run on a machine that never compiled them pays ~18 s
        # once (the kernel cache is the machine's, not the run's), which would flatter every share of that run
        steps[row["stage"]] = row.get("wall_seconds", 0.0) - row.get("compile_seconds", 0.0)
    return wall, lines, steps


def through(steps: dict[str, float], names: list[str]) -> float:
    return sum(steps.get(s, 0.0) for s in names)


def drop_page_cache() -> bool:
    """Whether the kernel dropped its page cache (root only): what an append reads then comes from disk."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def append_dump(sample: Path, fraction: float) -> int:
    """A new fwe dump of `fraction` of the corpus's documents (every source's, from the sample's expected.json), in
    files the size of the sample's fwe files: half planted duplicates of fwe documents taken across all its files (new
    ids; alternately exact copies and copies with a paragraph added), half new articles of the sample's generator
    (seed 99)."""
    import random

    import numpy as np

    from curate.sample.text import english_article

    files = sorted(f for f in (sample / "fwe" / "data").glob("*/*.parquet") if "2099" not in f.parent.name)
    table = pa.concat_tables(pq.read_table(f) for f in files)
    total = sum(v["good"] for v in json.loads((sample / "expected.json").read_text()).values() if isinstance(v, dict) and "good" in v)
    n = max(2, int(total * fraction))
    copies = min(table.num_rows, n // 2)
    rows = table.take(pa.array(np.linspace(0, table.num_rows - 1, copies).astype(np.int64)))
    texts = rows.column("text").to_pylist()
    texts = [t if i % 2 == 0 else f"{t}\n\nA new paragraph of the appended dump, number {i}." for i, t in enumerate(texts)]
    rng = random.Random(99)
    texts += [english_article(rng) for _ in range(n - copies)]
    ids = [f"{i}-append" for i in rows.column("id").to_pylist()] + [f"<urn:uuid:append-{i:08d}>" for i in range(n - copies)]
    out = pa.table({name: (pa.array(ids, rows.schema.field("id").type) if name == "id" else
                           pa.array(texts, rows.schema.field("text").type) if name == "text" else
                           pa.concat_arrays([rows.column(name).combine_chunks(),
                                             rows.column(name).combine_chunks().take(pa.array(np.arange(n - copies) % copies))]))
                    for name in rows.column_names}, schema=rows.schema)
    per_file = pq.read_metadata(files[0]).num_rows   # files the size of the sample's own: a dump is many files
    (sample / DUMP).mkdir(parents=True, exist_ok=True)
    for i, start in enumerate(range(0, n, per_file)):
        pq.write_table(out.slice(start, per_file), sample / DUMP / f"p{i:05d}_000_00000.parquet")
    return n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=4000)
    parser.add_argument("--fraction", type=float, default=0.10)
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (sample, run, fresh); a sample already there is reused")
    parser.add_argument("--repeat", type=int, default=1, help="rounds, each a run from scratch and the append on it (the median share is the result)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch_dir:
        tmp = args.keep or Path(scratch_dir)
        sample, out = Path(tmp) / "sample", Path(tmp) / "run"
        if not (sample / "fwe").exists():
            make_sample(sample, docs=args.docs, seed=0)
        rounds, added, lines, noop = [], 0, [], 0.0
        for k in range(1, args.repeat + 1):
            suffix = "" if k == 1 else str(k)
            if k > 1:   # the last round's run goes aside, deleted at the end: no run here follows the deletion of gigabytes
                out.rename(out.parent / f"{out.name}-round{k - 1}")
                (sample / DUMP).rename(sample.parent / "dump-aside")
            scratch, _, scratch_steps = run(sample, out, f"scratch{suffix}")
            quiet, _, _ = run(sample, out, f"noop{suffix}")
            noop = noop or quiet
            cold = False
            if args.repeat > 1:   # every append then starts alike: as days later, everything read back from disk
                cold = drop_page_cache()
                run(sample, out, f"append{suffix}-noop")
            if k == 1:
                added = append_dump(sample, args.fraction)
            else:
                (sample.parent / "dump-aside").rename(sample / DUMP)
            appended, got, append_steps = run(sample, out, f"append{suffix}")
            lines = lines or got
            rounds.append((scratch, scratch_steps, appended, append_steps, cold))
        subprocess.run(["rm", "-rf", *map(str, out.parent.glob(f"{out.name}-round*"))], check=True)
        again, _, _ = run(sample, out, "noop-after")   # a no-op re-run of an appended run: nothing measured or hashed again
        fresh, _, fresh_steps = run(sample, Path(tmp) / "fresh", "fresh")
        differ = compare(str(Path(tmp) / "fresh"), str(out))
        scratch, scratch_steps, appended, append_steps, _ = rounds[0]
        print(f"corpus: {args.docs:,} documents (sample); appended {added:,} (half planted duplicates, half new texts)")
        print("| run | wall s | share of from scratch |\n|---|---|---|")
        for name, t in (("from scratch", scratch), ("no-op re-run", noop), ("append", appended),
                        ("no-op re-run after the append", again), ("fresh run on the union", fresh)):
            print(f"| {name} | {t:.1f} | {t / scratch:.0%} |")
        print("\n| step | from scratch s | append s | fresh on union s |\n|---|---|---|---|")
        for step, t in scratch_steps.items():
            print(f"| {step} | {t:.1f} | {append_steps.get(step, 0.0):.1f} | {fresh_steps.get(step, 0.0):.1f} |")
        names = list(scratch_steps)[:list(scratch_steps).index("pack") + 1] if "pack" in scratch_steps else list(scratch_steps)
        mine, base = through(append_steps, names), through(scratch_steps, names)
        print(f"| through {names[-1]} | {base:.1f} | {mine:.1f} ({mine / base:.1%}) | {through(fresh_steps, names):.1f} |")
        if len(rounds) > 1:
            print(f"\n| round | from scratch, through {names[-1]} s | append wall s | append through {names[-1]} s | share |"
                  "\n|---|---|---|---|---|")
            shares = []
            for k, (_, s_steps, wall, a_steps, cold) in enumerate(rounds, 1):
                shares.append(through(a_steps, names) / through(s_steps, names))
                print(f"| {k}{' (page cache dropped)' if cold else ''} | {through(s_steps, names):.1f} | {wall:.1f} | "
                      f"{through(a_steps, names):.1f} | {shares[-1]:.1%} |")
            print(f"| **median** | | | | **{statistics.median(shares):.1%}** |")
        print("\nreuse lines of the append run:")
        print("\n".join(f"    {line.strip()}" for line in lines))
        print(f"\nappended run vs fresh run: {'identical' if not differ else f'{len(differ)} files differ: {differ[:5]}'}")
        return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
