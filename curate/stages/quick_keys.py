"""Quick keys of dedup's per-docs-shard results: what the graph sent a shard, by digest, known without reading it.

An append labels and settles dedup's graph whole, yet most docs shards' `resolve` and accounting results come out as
before; they are put back from `curate.rundir.outcomes` by a digest of their inputs. Read to be hashed, those inputs
cost a 1M-document append ~1,000 `resolve` and ~1,170 accounting tasks of a few milliseconds each. The senders keep a
digest of each batch beside its tag (`bundles.send(digests=True)`), and `resolve` tasks return theirs, so a shard's
task hashes what it was sent from those digests alone (`graph.sent_digests`) and reads its rows only when that key is
new. Node numbers are raw in what is sent: the accounting key also names the shards' numbering by a token that holds
while every shard keeps its number (an append's new files take new numbers; a removed or renumbered one gives a new
token), so equal digests mean the same documents.
"""

from __future__ import annotations

import hashlib
import json

from curate.dedup import bundles, graph
from curate.io import fs
from curate.rundir import RunDir, outcomes

SENT = "sent-digests.json"   # in the graph's folder: the numbering's token and, per docs shard, what `resolve` sent it
NUMBERING = "numbering.json"   # beside the kept results: the token and the shard names it was given for


def keep_sent(run: RunDir, root: str, kept: str, names: dict[str, str], resolved: list[dict]) -> None:
    """After `resolve` (`resolved`: each task's result; `names`: tag -> "source/shard" of every docs shard), what the
    accounting tasks key their quick restores by."""
    digests = graph.resolved_digests(resolved)
    before = run.read_json(fs.join(kept, NUMBERING)) or {}
    same = before.get("names") and all(names.get(tag) == name for tag, name in before["names"].items())
    token = before["token"] if same else hashlib.sha256(json.dumps(sorted(names.items())).encode()).hexdigest()
    fs.write_bytes(fs.join(kept, NUMBERING), json.dumps({"token": token, "names": names}).encode())
    if digests is None:   # a `resolve` result of an earlier version names nothing: no quick keys this run
        fs.remove(fs.join(root, SENT))
    else:
        fs.write_bytes(fs.join(root, SENT), json.dumps({"numbering": token, "resolved": digests}).encode())


def resolve_key(basis: dict, reps: str | None) -> str | None:
    """`resolve`'s: what it was sent (representatives' rows, `bundles.digest`) and `basis` (its documents, its names)."""
    return None if reps is None else outcomes.digest({**basis, "sent": {"reps": reps}}, {})


def accounting_key(basis: dict, tag: str, members: str | None, reps: str | None, sent_file: dict | None,
                   sources: list[str]) -> str | None:
    """The accounting's: its members' rows, their representatives' ids and the rows of its own representatives, the
    numbering's token (`sent_file`: what `keep_sent` wrote; None: none), the sources by priority and `basis`."""
    if members is None or reps is None or sent_file is None:
        return None
    sent = {"members": members, "reps": reps, "resolved": sent_file["resolved"].get(tag, bundles.NOTHING)}
    return outcomes.digest({**basis, "sent": sent, "numbering": sent_file["numbering"], "sources": sources}, {})
