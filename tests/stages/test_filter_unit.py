"""A real stage's first test needs no pipeline: `run_stage` runs `filter` alone on a few documents."""

from __future__ import annotations


def test_filter_removes_what_its_where_rejects_and_ledgers_it(run_stage):
    done = run_stage("filter", {"where": {"all": "length(text) > 12"}},
                     docs={"web": ["short", "long enough text", "tiny"], "books": ["a long book text", "no"]})
    ledger = done.ledger()
    assert ledger.column("id").to_pylist() == ["books-1", "web-0", "web-2"]
    assert set(ledger.column("reason").to_pylist()) == {"where:length(text) > 12"}
    assert [(c["source"], c["in"], c["kept"]) for c in done.counts] == [("books", 2, 1), ("web", 3, 1)]
