"""A set of rows' digest (`curate.dedup.rowset`): the same whatever the rows' order, their split among senders and the
dtypes they were sent as; another value, row or column name gives another."""

import numpy as np
import pyarrow as pa

from curate.dedup import rowset

NAMES = ["node", "rep_id", "sim", "gone"]


def rows():
    return [np.array([3, 1, 2, 9], np.uint64), pa.array(["a-1", "", None, "long id " * 20]),
            np.array([0.5, np.nan, 1.0, 0.25], np.float32), np.array([True, False, False, True])]


def take(cols, at):
    return [c.take(pa.array(at)) if isinstance(c, pa.Array) else c[at] for c in cols]


def test_order_and_split_do_not_change_it():
    whole = rowset.digest(NAMES, rows())
    assert (rowset.digest(NAMES, take(rows(), [2, 0, 3, 1])) == whole).all()
    parts = rowset.digests(NAMES, [take(rows(), [3]), take(rows(), [1, 0]), take(rows(), [2])])
    assert parts.shape == (3, rowset.LANES) and (rowset.add(list(parts)) == whole).all()
    assert (parts[1] == rowset.digest(NAMES, take(rows(), [1, 0]))).all()   # each part as if hashed alone
    assert whole[2] == 4 and (rowset.add([]) == 0).all()


def test_equal_values_of_other_dtypes_give_the_same_digest():
    """Receivers cast what they read (a recalled component's rows may come as int64, a settled one's as uint64)."""
    node, rep_id, sim, gone = rows()
    as_sent = [node.astype(np.int64), rep_id.cast(pa.large_string()), sim.astype(np.float64), gone.astype(np.uint8)]
    assert (rowset.digest(NAMES, as_sent) == rowset.digest(NAMES, rows())).all()


def test_another_value_row_or_name_gives_another_digest():
    whole = rowset.digest(NAMES, rows())
    node, rep_id, sim, gone = rows()
    changed = [
        [node + np.uint64(1), rep_id, sim, gone],
        [node, pa.array(["a-2", "", None, "long id " * 20]), sim, gone],
        [node, pa.array(["a-1", None, None, "long id " * 20]), sim, gone],   # an empty id is not a missing one
        [node, rep_id, sim, ~gone],
        take(rows(), [0, 1, 2]),
    ]
    assert all((rowset.digest(NAMES[:len(c)], c) != whole).any() for c in changed)
    assert (rowset.digest(["node", "rep", "sim", "gone"], rows()) != whole).any()
    swapped = [np.array([1, 3, 2, 9], np.uint64), pa.array(["a-1", "", None, "long id " * 20]), sim, gone]
    assert (rowset.digest(NAMES, swapped) != whole).any()   # a row is its values together, not each column's set
