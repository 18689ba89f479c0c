"""What a pii step did, for the summary, summary.json and the report: documents edited and spans by kind,
per source, from the step's task markers (exact, also for a resumed run)."""

from __future__ import annotations

EDITED, SPANS = "edited", "spans:"   # marker counts: documents edited, spans by kind (`spans:email`, ...)
TIMEOUT = "pii_timeout"              # the ledger reason of a document a pattern of yours ran past its budget on


def edit_counts(markers: list[dict]) -> dict[str, dict]:
    """Per source: documents in, documents edited, spans by kind (kinds sorted), documents removed on a timeout."""
    out: dict[str, dict] = {}
    for m in markers:
        row = out.setdefault(m["source"], {"in": 0, "documents": 0, "spans": {}, "timeouts": 0})
        row["in"] += m["in"]
        row["documents"] += m.get(EDITED, 0)
        row["timeouts"] += m.get("removed", {}).get(TIMEOUT, 0)
        for key, n in m.items():
            if key.startswith(SPANS):
                row["spans"][key[len(SPANS):]] = row["spans"].get(key[len(SPANS):], 0) + n
    for row in out.values():
        row["spans"] = dict(sorted(row["spans"].items()))
    return out


def edit_flags(rows: list[dict], markers: dict[str, list[dict]]) -> None:
    """Add `edits` ({documents, spans by kind}) to the summary rows of the text-editing steps (`markers`: theirs, by step)."""
    counts = {step: edit_counts(m) for step, m in markers.items()}
    for row in rows:
        if row["source"] in counts.get(row["stage"], {}):
            c = counts[row["stage"]][row["source"]]
            row["edits"] = {"documents": c["documents"], "spans": c["spans"]}


def edit_lines(step: str, markers: list[dict], order: list[str] = ()) -> list[str]:
    """`pii: 7 of 16 documents edited (43.8%); spans: email 7, ipv4 5`, then one line per source (in `order`)."""
    counts = edit_counts(markers)
    counts = {s: counts[s] for s in sorted(counts, key=lambda s: (order.index(s) if s in order else len(order), s))}
    docs, edited = sum(c["in"] for c in counts.values()), sum(c["documents"] for c in counts.values())
    spans: dict[str, int] = {}
    for c in counts.values():
        for kind, n in c["spans"].items():
            spans[kind] = spans.get(kind, 0) + n
    share = f" ({edited / docs:.1%})" if docs else ""
    lines = [f"{step}: {edited:,} of {docs:,} documents edited{share}; spans: "
             + (", ".join(f"{k} {n:,}" for k, n in sorted(spans.items())) or "none")]
    for source, c in counts.items():
        lines.append((f"  {source:10} edited {c['documents']:,} of {c['in']:,}  "
                      + "  ".join(f"{k} {n:,}" for k, n in c["spans"].items())).rstrip())
    if timeouts := sum(c["timeouts"] for c in counts.values()):
        lines.append(f"WARNING: {step}: {timeouts:,} document{'s' if timeouts > 1 else ''} removed: a pattern of yours ran past "
                     f"its time budget (pattern_timeout; curate query RUN \"SELECT * FROM ledger WHERE reason = '{TIMEOUT}'\")")
    return lines
