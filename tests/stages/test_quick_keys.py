"""Dedup's quick keys (`curate.stages.quick_keys`): the numbering's token holds while every docs shard keeps its number
(an append's new files take new ones) and changes when one moves or goes; what `resolve` tasks sent each receiver is
summed by receiver, whatever the senders' order."""

import numpy as np

from curate.dedup import graph, rowset
from curate.rundir import RunDir
from curate.stages import quick_keys


def lanes(*values) -> str:
    return rowset.digest(["node"], [np.array(values, np.uint64)]).tobytes().hex()


def test_the_numbering_token_holds_while_every_shard_keeps_its_number(tmp_path):
    run, root, kept = RunDir(str(tmp_path / "run")), str(tmp_path / "graph"), str(tmp_path / "kept")
    names = {"00-0000000": "fwe/a", "00-0000001": "fwe/b", "01-0000000": "dclm/c"}
    tokens = []
    for now in (names, {**names, "00-0000002": "fwe/z"},                # a new file, numbered last: the same token
                {**names, "00-0000002": "fwe/z"},                      # again: the same
                {"00-0000000": "fwe/0", "00-0000001": "fwe/a", "00-0000002": "fwe/b", "01-0000000": "dclm/c"},  # sorted first
                {"00-0000000": "fwe/0", "00-0000001": "fwe/a", "01-0000000": "dclm/c"}):   # one removed
        quick_keys.keep_sent(run, root, kept, now, [{"sent": {"01-0000000": lanes(1)}}])
        tokens.append(run.read_json(f"{root}/{quick_keys.SENT}")["numbering"])
    assert tokens[0] == tokens[1] == tokens[2] != tokens[3] != tokens[4] and tokens[3] != tokens[0]


def test_what_resolve_sent_is_summed_by_receiver_and_an_older_result_gives_none(tmp_path):
    one = graph.resolved_digests([{"sent": {"r": lanes(1, 2)}}, {"sent": {"r": lanes(3), "q": lanes(4)}}])
    other = graph.resolved_digests([{"sent": {"r": lanes(3, 1), "q": lanes(4)}}, {"sent": {"r": lanes(2)}}])
    assert one == other and one["r"] == lanes(1, 2, 3) and one["q"] == lanes(4)
    assert graph.resolved_digests([{"in": 3}]) is None
    run, root = RunDir(str(tmp_path / "run")), str(tmp_path / "graph")
    quick_keys.keep_sent(run, root, str(tmp_path / "kept"), {"00-0000000": "fwe/a"}, [{"in": 3}])
    assert run.read_json(f"{root}/{quick_keys.SENT}") is None   # no quick keys this run: every shard read as before
