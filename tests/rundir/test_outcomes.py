"""A dedup step's per-shard results are kept by the digest of what they were made from (`curate.rundir.outcomes`)."""

import os

import numpy as np

from curate.rundir import outcomes


def _write(path, data: bytes) -> str:
    """As curate writes every file: a new file renamed over the name (a kept result is a hard link to the old one)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(f"{path}.tmp", "wb") as f:
        f.write(data)
    os.replace(f"{path}.tmp", path)
    return str(path)


def test_a_kept_result_comes_back_only_for_the_same_inputs(tmp_path):
    folder = str(tmp_path / "kept")
    key = outcomes.digest({"docs": "abc"}, {"node": np.array([1, 2], np.uint64), "rep_id": np.array(["a", "b"], object)})
    assert key == outcomes.digest({"docs": "abc"}, {"rep_id": np.array(["a", "b"], object), "node": np.array([1, 2], np.uint64)})
    for other in ({"docs": "abd"}, {"node": np.array([1, 3], np.uint64)}, {"rep_id": np.array(["a", "c"], object)}):
        basis = {"docs": other.pop("docs", "abc")}
        arrays = {"node": np.array([1, 2], np.uint64), "rep_id": np.array(["a", "b"], object), **other}
        assert outcomes.digest(basis, arrays) != key, other
    targets = {"ledger": _write(tmp_path / "out/ledger.parquet", b"removed rows"), "clusters": str(tmp_path / "out/clusters.parquet")}
    outcomes.keep(folder, "fwe/s1", key, targets, {"in": 2, "kept": 2, "removed": {}})
    os.remove(targets["ledger"])   # what a GLOBAL step's settle does before it runs again
    assert outcomes.restore(folder, "fwe/s1", "another digest", targets) is None and not os.path.exists(targets["ledger"])
    assert outcomes.restore(folder, "fwe/s1", key, targets) == {"in": 2, "kept": 2, "removed": {}}
    assert open(targets["ledger"], "rb").read() == b"removed rows" and not os.path.exists(targets["clusters"])   # absent stays absent


def test_results_written_again_replace_the_kept_ones_and_shards_gone_are_pruned(tmp_path):
    folder, out = str(tmp_path / "kept"), tmp_path / "out"
    target = {"bundle": _write(out / "a.arrow", b"first")}
    outcomes.keep(folder, "fwe/s1", "k1", target, {"in": 1})
    _write(out / "a.arrow", b"second")
    outcomes.keep(folder, "fwe/s1", "k2", target, {"in": 2})
    assert outcomes.restore(folder, "fwe/s1", "k1", target) is None
    assert outcomes.restore(folder, "fwe/s1", "k2", target) == {"in": 2} and open(target["bundle"], "rb").read() == b"second"
    outcomes.keep(folder, "dclm/s9", "k3", target, {"in": 3})
    outcomes.prune(folder, {"fwe/s1"})
    assert sorted(os.listdir(os.path.join(folder, "fwe"))) == ["s1.bundle", "s1.json"] and os.listdir(os.path.join(folder, "dclm")) == []


def test_the_records_named_are_the_files_a_restore_reads_first(tmp_path):
    """`records`: what a phase asks of the disk before its tasks run (`Phase.prefetch`), one file a name."""
    folder, out = str(tmp_path / "kept"), tmp_path / "out"
    targets = {name: {"bundle": _write(out / f"{name}.arrow", b"rows")} for name in ("fwe/s1", "dclm/s9")}
    for name, target in targets.items():
        outcomes.keep(folder, name, "k", target, {"in": 1})
    paths = outcomes.records(folder, ["fwe/s1", "dclm/s9"])
    assert all(os.path.exists(p) for p in paths)
    os.remove(paths[1])
    assert outcomes.restore(folder, "fwe/s1", "k", targets["fwe/s1"]) == {"in": 1}
    assert outcomes.restore(folder, "dclm/s9", "k", targets["dclm/s9"]) is None   # its record was the one named
