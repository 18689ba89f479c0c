"""Four Ray nodes, the run directory on S3, a node lost: the zyda2 job on one machine's loopback (issue 32).

A head and three worker nodes (separate raylets, 1 CPU each, bench/loopback.py) and moto's S3 server on
127.0.0.1. The sample corpus of --docs documents is made (cached under --corpora) and uploaded to
s3://curate-nodes/sample; `curate run pipelines/zyda2.yaml --address CLUSTER --output s3://...` then runs
once undisturbed and once per --kill step, where the first worker node is killed (SIGKILL to its raylet
and its workers) as soon as the driver's progress line names that step; a killed node is replaced
before the next run. Each S3 run directory is downloaded and compared byte for byte (bench/compare_runs.py)
with an `--inline` run of the same corpus on local disk.

Per node: tasks run and their seconds (from the task markers, which name the node), and the CPU seconds
of its worker processes (/proc) and the bytes they read from and wrote to S3 (their connections to the S3
server, by `ss`), sampled every 0.5 s.

    python bench/bench_nodes.py --docs 100000 --kill dedup tokenize
    python bench/bench_nodes.py --docs 100000 --no-whole --kill dedup+tokenize   # one run, two nodes lost
    python bench/bench_nodes.py --docs 2000 --kill tokenize        # a quick look

Results go to bench/nodes.json and a Markdown table on stdout.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from compare_runs import compare  # noqa: E402
from loopback import LoopbackCluster, NodeMeter, S3Server, raylet_pid  # noqa: E402

BUCKET = "curate-nodes"
ZYDA2 = ROOT / "pipelines" / "zyda2.yaml"


def curate_run(output: str, sample: str, address: str | None, kill_at: list[str] = (), on_kill=None) -> dict:
    """`curate run zyda2` in a subprocess; calls `on_kill()` once a stderr line starts with `[<step>` for each
    step of `kill_at` (a different node each time)."""
    where = ["--address", address] if address else ["--inline"]
    cmd = ["nice", sys.executable, "-m", "curate", "run", str(ZYDA2), "--output", output, *where]
    env = {**os.environ, "CURATE_SAMPLE": sample, "PYTHONPATH": str(ROOT)}
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    lines, killed, todo = [], [], list(kill_at)
    for line in proc.stderr:
        lines.append(line)
        if todo and line.startswith(f"[{todo[0]}"):
            todo.pop(0)
            killed.append({"line": line.strip(), "after_s": round(time.monotonic() - started, 1), "node": on_kill()})
    proc.wait()
    return {"rc": proc.returncode, "wall_s": round(time.monotonic() - started, 1), "killed": killed,
            "stderr_tail": "".join(lines[-15:]), "left": [ln.strip() for ln in lines if "left the Ray cluster" in ln]}


def per_node(run: str, stage: str = "") -> dict[str, dict]:
    """node id -> tasks and task seconds, from the markers of a downloaded run directory (of one stage)."""
    out = collections.defaultdict(lambda: {"tasks": 0, "task_s": 0.0})
    for path in Path(run, "_state", stage).rglob("*.json"):
        if path.name in ("stage.json", "record.json") or path.name.endswith(".key.json"):
            continue
        try:
            marker = json.loads(path.read_text())
        except ValueError:
            continue
        if isinstance(marker, dict) and (node := marker.get("node")):
            entry = out[node.split("node ")[-1].rstrip(")")[:8]]
            entry["tasks"] += 1
            entry["task_s"] += float(marker.get("seconds") or 0)
    return {n: {"tasks": v["tasks"], "task_s": round(v["task_s"], 1)} for n, v in out.items()}


def download(uri: str, local: str) -> None:
    from curate.io import fs

    store, stripped = fs.filesystem(uri)
    store.get(stripped.rstrip("/") + "/", local.rstrip("/") + "/", recursive=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--kill", nargs="*", default=["dedup", "tokenize"],
                        help="a run per argument, losing a node as each step starts; `dedup+tokenize`: one run losing two")
    parser.add_argument("--no-whole", action="store_true", help="leave out the run that loses no node")
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--corpora", default="/tmp/curate-corpora")
    parser.add_argument("--work", default=None, help="where the local runs go (default: a temp dir)")
    parser.add_argument("--results", default=str(ROOT / "bench" / "nodes.json"))
    args = parser.parse_args(argv)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    from curate.io import fs
    from curate.sample import make_sample

    work = Path(args.work or tempfile.mkdtemp(prefix="bench-nodes-"))
    local_sample = Path(args.corpora) / f"sample-{args.docs}"
    if not (local_sample / "_SUCCESS").exists():
        t = time.monotonic()
        make_sample(local_sample, docs=args.docs, seed=0)
        (local_sample / "_SUCCESS").write_bytes(b"")
        print(f"sample of {args.docs:,} docs made in {time.monotonic() - t:.0f}s", file=sys.stderr)

    inline_dir = str(work / "inline")
    inline = curate_run(inline_dir, str(local_sample), None)
    print(f"inline: rc {inline['rc']} in {inline['wall_s']}s", file=sys.stderr)
    assert inline["rc"] == 0, inline["stderr_tail"]

    s3 = S3Server(BUCKET)
    cluster = None
    results = {"docs": args.docs, "nodes": args.nodes, "inline_wall_s": inline["wall_s"], "runs": []}
    try:
        t = time.monotonic()
        sample = f"s3://{BUCKET}/sample"
        fs.upload_tree(str(local_sample), sample, last="_SUCCESS")
        results["upload_s"] = round(time.monotonic() - t, 1)
        cluster = LoopbackCluster(args.nodes, object_store_mb=200)
        for step in ([] if args.no_whole else [None]) + args.kill:
            while len(cluster.nodes()) < args.nodes:   # a node killed by the run before is replaced
                cluster.add()
            name = f"kill-{step.replace('+', '-')}" if step else "whole"
            out = f"s3://{BUCKET}/runs/{name}"
            ids = {cluster.node_id(n): raylet_pid(n) for n in cluster.nodes()}

            def kill():
                victim = cluster.workers[0]
                cluster.kill(victim)
                return cluster.node_id(victim)

            with NodeMeter(ids, s3.port) as meter:
                run = curate_run(out, sample, cluster.address, step.split("+") if step else [], kill)
            local = str(work / name)
            download(out, local)
            differ = compare(inline_dir, local) if run["rc"] == 0 else ["(the run failed)"]
            tasks = per_node(local)
            usage = meter.totals()
            nodes = {n: {**tasks.get(n, {"tasks": 0, "task_s": 0.0}), **usage[n],
                         "role": "head" if n == cluster.node_id(cluster.cluster.head_node) else "worker"} for n in ids}
            entry = {"run": name, "rc": run["rc"], "wall_s": run["wall_s"], "identical_to_inline": not differ,
                     "differ": differ[:20], "killed": run["killed"], "left": run["left"], "nodes": nodes}
            if run["rc"] != 0:
                entry["stderr_tail"] = run["stderr_tail"]
            results["runs"].append(entry)
            print(json.dumps(entry, indent=1), file=sys.stderr)
    finally:
        if cluster is not None:
            cluster.stop()
        s3.stop()
    Path(args.results).write_text(json.dumps(results, indent=1) + "\n")
    print(table(results))
    return 0 if all(r["rc"] == 0 and r["identical_to_inline"] for r in results["runs"]) else 1


def table(results: dict) -> str:
    rows = [f"{results['docs']:,} documents, {results['nodes']} nodes; inline run {results['inline_wall_s']} s, "
            f"upload of the sample {results.get('upload_s')} s", "",
            "| run | wall s | = inline | node lost | node | role | tasks | task s | CPU s | S3 read MB | S3 written MB |",
            "|---|---:|---|---|---|---|---:|---:|---:|---:|---:|"]
    for r in results["runs"]:
        lost = ", ".join(f"{k['node']} at {k['after_s']} s" for k in r["killed"]) or "-"
        for i, (node, v) in enumerate(sorted(r["nodes"].items(), key=lambda kv: kv[1]["role"] != "head")):
            head = (r["run"], r["wall_s"], "yes" if r["identical_to_inline"] else "NO", lost) if i == 0 else ("", "", "", "")
            mark = " (killed)" if any(node == k["node"] for k in r["killed"]) else ""
            rows.append(f"| {' | '.join(map(str, head))} | {node}{mark} | {v['role']} | {v['tasks']} | {v['task_s']} | "
                        f"{v['cpu_s']} | {v['s3_read_mb']} | {v['s3_written_mb']} |")
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main())
