"""`bench/bench_dedup_graph.py` at a small size: the bench measures the real graph phases, so it must keep finding the
band rows and the gathered rows the stages write (it had silently measured nothing: no edges, no giant cluster)."""

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_dedup_graph.py"


def test_the_graph_bench_finds_edges_labels_them_in_rounds_and_settles_the_giant_cluster(tmp_path):
    out = tmp_path / "out.json"
    subprocess.run([sys.executable, str(BENCH), "--docs", "600000", "--work", str(tmp_path / "work"), "--workers", "1",
                    "--json", str(out)], check=True, capture_output=True, timeout=600)
    result = json.loads(out.read_text())
    phases = result["phases"]
    assert result["partitions"] == 3 and phases["buckets"]["edges"] > 100_000 and phases["init"]["nodes"] > 100_000
    assert phases["propagate"]["rounds"] >= 2 and phases["propagate"]["message_files_per_round"] == 3
    assert phases["settle"]["members"] == result["giant"] == 100_000 and phases["settle"]["checks"] > 10_000
