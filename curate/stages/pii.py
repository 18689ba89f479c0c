"""The pii stage: e-mail and IP addresses (phone numbers and the user's own patterns on request) replaced by
placeholders, every replacement recorded span by span. The first stage that edits text rather than removing it.

It writes `RUN/edits/<step>/<source>/<shard>.parquet` (source, id, kind, start, end in code points, placeholder,
original_sha256; the original itself only with `keep_original: true`) and nothing else: `RUN/docs/` stays as
ingested, and every later step reads the edited text through `ShardStage.live_batches` (curate/rundir/edits.py).
It removes no document (in = kept), except one on which a pattern of yours runs past `pattern_timeout`: that one
goes to the ledger (reason `pii_timeout`) with a warning naming it, as kept unscanned it could leak what the pattern
was meant to find (curate/pii/user.py). It is one user of the text-editing template (curate/stages/edit.py), which
records, counts and shows its edits. What counts as an address, and the exceptions,
are in curate/pii/patterns.py; `curate query RUN "SELECT * FROM edits"` shows the edits of every editing step.
"""

from __future__ import annotations

import logging
import re

import pyarrow as pa

from curate.common.schema import Field
from curate.errors import ConfigError
from curate.pii.find import find_spans
from curate.pii.patterns import KINDS, build_kinds
from curate.pii.user import problem
from curate.stages.edit import EditFacets, Edited, EditStage
from curate.stages.registry import stage
from curate.stages.shard import removals

log = logging.getLogger("curate")
TIMEOUT = "pii_timeout"   # the ledger reason of a document a pattern of yours ran past its budget on


class PiiFacets(EditFacets):
    REPORT = ("curate.report.pii:SECTION",)


@stage("pii")
class PiiStage(EditStage):
    FACETS = PiiFacets
    VERSION = 2   # e-mail in any script and across invisible characters, phones not inside longer numbers
    OPTIONS = {
        "kinds": Field((list,), default=lambda: ["email", "ipv4", "ipv6"], item=Field((str,), choices=list(KINDS)),
                       doc="what to replace: email, ipv4, ipv6, phone (off by default: many false positives)"),
        "patterns": Field((dict,), default=dict, item=Field((str,)),
                          doc="your own kinds: name -> regex (Python syntax; run by the regex package with a time budget, "
                              "prefiltered in Arrow by a literal every match contains)"),
        "pattern_timeout": Field((float,), default=1.0, min=0.001, max=3600.0,
                                 doc="seconds one of your patterns may take on one document; past it the document is "
                                     "removed (ledger reason pii_timeout) and named in a warning"),
        "placeholders": Field((dict,), default=dict, item=Field((str, list)),
                              doc="kind -> a placeholder or a list (one is chosen by the hash of the original); "
                                  "defaults: datatrove's / FineWeb-2's, and <name> for your own kinds"),
        "public_ips_only": Field((bool,), default=True, doc="replace only global IP addresses (private, loopback, "
                                                            "documentation ranges are kept)"),
        "keep_domains": Field((list,), default=list, item=Field((str,)),
                              doc="e-mail domains never replaced (besides example.com/.org/.net and .test/.example/.invalid)"),
        "keep_original": Field((bool,), default=False, doc="store each replaced original in the edits table (it is PII!)"),
    }

    @classmethod
    def validate_options(cls, options, sources, file, key):
        if not options["kinds"] and not options["patterns"]:
            raise ConfigError(file, f"{key}.kinds", "nothing to look for: name at least one kind, or give your own patterns")
        for name, regex in options["patterns"].items():
            if name in KINDS or not re.fullmatch(r"[a-z][a-z0-9_]*", name):
                raise ConfigError(file, f"{key}.patterns.{name}", "name your pattern in lower case (letters, digits, _), "
                                                                  f"other than the built-in kinds {', '.join(KINDS)}")
            if (why := problem(regex)) is not None:
                raise ConfigError(file, f"{key}.patterns.{name}", why)
        for kind, value in options["placeholders"].items():
            if kind not in (*KINDS, *options["patterns"]):
                raise ConfigError(file, f"{key}.placeholders.{kind}", f"no such kind; kinds are {', '.join([*KINDS, *options['patterns']])}")
            if isinstance(value, list) and (not value or not all(isinstance(v, str) for v in value)):
                raise ConfigError(file, f"{key}.placeholders.{kind}", "expected a string or a non-empty list of strings")

    def edit_kinds(self) -> list[str]:
        return sorted([*self.options["kinds"], *self.options["patterns"]])

    def setup(self) -> None:
        o = self.options
        self.kinds = build_kinds(o["kinds"], o["patterns"], o["placeholders"], o["public_ips_only"], o["keep_domains"],
                                 o["pattern_timeout"])

    def removes(self) -> bool:
        return bool(self.options["patterns"])   # only a pattern of yours can run out of time

    def edit(self, batch: pa.Table) -> pa.Table | Edited:
        timed_out: list = []
        found = find_spans(batch.column("text"), self.kinds, timed_out)
        if not timed_out:
            return found
        ids = batch.column("id").combine_chunks().take(pa.array([row for row, _, _ in timed_out], pa.int64()))
        details = [f"pattern '{kind}' ran past its {seconds:g} s budget (stages.{self.name}.pattern_timeout)" for _, kind, seconds in timed_out]
        for doc_id, detail in zip(ids.to_pylist(), details):
            log.warning("curate: warning: %s: document %s removed (%s): %s", self.name, doc_id, TIMEOUT, detail)
        return Edited(found, removals(ids, TIMEOUT, pa.array(details, pa.string())))
