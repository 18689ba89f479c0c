"""The line_filter stage: C4's line rules (Raffel et al. 2020), as edits. A line goes when it mentions JavaScript,
lorem ipsum or a cookie / terms / privacy notice, has fewer than `min_words` words, or does not end in terminal
punctuation; blank lines stay. Each dropped line (with its newline) is a span replaced by nothing, recorded in
`RUN/edits/<step>/` by the editing template (curate/stages/edit.py): `docs/` stays as ingested, later steps read
the filtered text, and the `edits` view says which rule dropped which line. Vectorised over the batch's lines.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.common.schema import Field
from curate.rundir import EditsRecord
from curate.stages.edit import EditFacets, EditStage, edit_counts, spans
from curate.stages.registry import stage

POLICY = ("terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies", "use cookies")
RULES = ("javascript", "lorem_ipsum", "policy", "too_few_words", "no_terminal_punctuation")   # checked in this order


class LineFilterFacets(EditFacets):
    REPORT = ("curate.report.line_filter:SECTION",)

    @classmethod
    def lines(cls, run, step, rows, order):
        """`clean: dropped 1,234 lines in 345 of 4,000 documents (8.6%): javascript 12, too_few_words 800, ...`."""
        counts = edit_counts(run.markers(step)) if run.find_record(step, EditsRecord) is not None else {}
        if not counts:
            return []
        docs, edited = sum(c["in"] for c in counts.values()), sum(c["documents"] for c in counts.values())
        by_rule = {r: sum(c["spans"].get(r, 0) for c in counts.values()) for r in RULES}
        return [f"{step}: dropped {sum(by_rule.values()):,} lines in {edited:,} of {docs:,} documents"
                + (f" ({edited / docs:.1%})" if docs else "") + ": " + ", ".join(f"{r} {n:,}" for r, n in by_rule.items() if n)]


@stage("line_filter")
class LineFilterStage(EditStage):
    FACETS = LineFilterFacets
    OPTIONS = {
        "min_words": Field((int,), default=3, min=0, max=10_000, doc="drop lines with fewer words (C4: 3; 0 keeps short lines)"),
        "terminal_punctuation": Field((bool,), default=True, doc="drop lines not ending in . ! ? or a closing quote"),
        "javascript": Field((bool,), default=True, doc="drop lines that mention JavaScript (enable-JavaScript notices)"),
        "lorem_ipsum": Field((bool,), default=True, doc="drop lines holding 'lorem ipsum' placeholder text"),
        "policy": Field((bool,), default=True, doc="drop cookie, terms-of-use and privacy-policy boilerplate lines"),
    }

    def edit_kinds(self) -> list[str]:
        o = self.options
        on = {"javascript": o["javascript"], "lorem_ipsum": o["lorem_ipsum"], "policy": o["policy"],
              "too_few_words": o["min_words"] > 0, "no_terminal_punctuation": o["terminal_punctuation"]}
        return [r for r in RULES if on[r]]

    def edit(self, batch: pa.Table) -> pa.Table:
        o = self.options
        lines = pc.split_pattern(batch.column("text").combine_chunks(), "\n")
        flat, offsets = pc.list_flatten(lines), lines.offsets.to_numpy()
        parent = pc.list_parent_indices(lines).to_numpy()
        size = pc.utf8_length(flat).to_numpy().astype(np.int64)
        last = np.zeros(len(flat), bool)
        last[offsets[1:][offsets[1:] > offsets[:-1]] - 1] = True             # a document's last line has no newline
        width = size + ~last                                                   # with its newline
        start = np.cumsum(width) - width
        start -= start[offsets[:-1][parent]] if len(flat) else 0               # into the document's text
        line = pc.utf8_trim_whitespace(flat)
        checks = {"javascript": o["javascript"] and pc.match_substring(line, "javascript", ignore_case=True),
                  "lorem_ipsum": o["lorem_ipsum"] and pc.match_substring(line, "lorem ipsum", ignore_case=True),
                  "policy": o["policy"] and pc.match_substring_regex(line, "|".join(POLICY), ignore_case=True),
                  "too_few_words": o["min_words"] > 0 and pc.less(pc.count_substring_regex(line, r"\S+"), o["min_words"]),
                  "no_terminal_punctuation": o["terminal_punctuation"] and pc.invert(pc.match_substring_regex(line, "[.!?\"'”’]$"))}
        hits = [np.asarray(c.to_numpy(zero_copy_only=False), bool) if c is not False else np.zeros(len(flat), bool)
                for c in checks.values()]
        drop = np.logical_or.reduce(hits) & (pc.utf8_length(line).to_numpy() > 0)   # blank lines stay
        rule = np.array(RULES)[np.argmax(np.stack(hits), axis=0)] if len(flat) else np.array([], str)
        return spans(parent[drop], rule[drop], start[drop], (start + width)[drop], [""] * int(drop.sum()))
