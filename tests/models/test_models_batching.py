"""Token-budget batching, windows and padding (numpy only), and the output columns."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from curate.models.batching import pad_rows, plan_batches, rows_for
from curate.models.output import Outputs


def test_truncate_rows_keep_the_first_or_last_tokens():
    lengths = np.array([0, 3, 10, 25])
    doc, start, length = rows_for(lengths, 8)
    assert doc.tolist() == [0, 1, 2, 3] and start.tolist() == [0] * 4 and length.tolist() == [0, 3, 8, 8]
    _, start, length = rows_for(lengths, 8, side="left")
    assert start.tolist() == [0, 0, 2, 17] and length.tolist() == [0, 3, 8, 8]


def test_windows_cover_every_token_with_half_overlap():
    lengths = np.array([5, 8, 9, 30, 0, 17])
    doc, start, length = rows_for(lengths, 8, mode="max")
    assert np.bincount(doc, minlength=len(lengths)).tolist() == [1, 1, 2, 7, 1, 4]
    for d, n in enumerate(lengths):
        rows = doc == d
        s, ln = start[rows], length[rows]
        covered = np.zeros(n, bool)
        for a, b in zip(s, ln):
            covered[a:a + b] = True
        assert covered.all()
        assert (ln == min(n, 8)).all(), "every window is full-size unless the document is shorter"
        assert (s + ln).max(initial=0) == n, "the last window ends at the document's end"
        assert (np.diff(s) <= 4).all() and (np.diff(s) > 0).all(), "stride is half a window"


def test_batches_respect_the_budget_and_hold_every_row_once():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 600, size=1000)
    batches = plan_batches(lengths, 4096)
    everything = np.concatenate(batches)
    assert sorted(everything.tolist()) == list(range(1000))
    for b in batches:
        assert len(b) * lengths[b].max() <= 4096
    longest = [lengths[b].max() for b in batches]
    assert longest == sorted(longest, reverse=True), "sorted over the whole call, longest first"
    assert len(plan_batches(np.array([9000, 10]), 4096)) == 2, "a row past the budget is a batch alone"


def test_pad_rows_builds_each_row_with_its_special_tokens():
    flat = np.arange(100, 120)
    ids, mask = pad_rows(flat, np.array([0, 10, 15]), np.array([3, 0, 5]), np.array([1]), np.array([2]), pad_id=0)
    assert ids.tolist() == [[1, 100, 101, 102, 2, 0, 0], [1, 2, 0, 0, 0, 0, 0], [1, 115, 116, 117, 118, 119, 2]]
    assert mask.tolist() == [[1] * 5 + [0] * 2, [1] * 2 + [0] * 5, [1] * 7]
    ids, _ = pad_rows(flat, np.array([4]), np.array([2]), np.array([], dtype=np.int64),
                      np.array([], dtype=np.int64), pad_id=9)
    assert ids.tolist() == [[104, 105]]


def test_outputs_columns_and_nulls():
    out = Outputs("q", labels=["High", "Medium", "Low"], probs=True, label="Low")
    logits = np.log(np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]], dtype=np.float32))
    table = out.from_logits(4, np.array([0, 2]), logits)
    assert table.schema.names == ["q_score", "q_label", "q_prob_high", "q_prob_medium", "q_prob_low"]
    rows = table.to_pylist()
    assert rows[1] == rows[3] == dict.fromkeys(table.schema.names)
    assert rows[0]["q_label"] == "High" and rows[0]["q_score"] == pytest.approx(0.1)
    assert rows[2]["q_label"] == "Low" and rows[2]["q_prob_medium"] == pytest.approx(0.3)
    reg = Outputs("edu", regression=True).from_logits(5, np.arange(5), np.array([[-1.0], [0.5], [2.5], [3.5], [7.2]]))
    assert reg["edu_int_score"].to_pylist() == [0, 0, 2, 4, 5], "round(clamp(score, 0, 5)), halves to even"
    assert reg["edu_score"].to_pylist() == [-1.0, 0.5, 2.5, 3.5, pytest.approx(7.2)]
    with pytest.raises(ValueError, match="collide"):
        Outputs("q", labels=["A-b", "a_b"], probs=True)
    assert Outputs("q", labels=["x"]).empty(3).equals(pa.table({"q_score": pa.nulls(3, pa.float64()),
                                                                 "q_label": pa.nulls(3, pa.string())}))
