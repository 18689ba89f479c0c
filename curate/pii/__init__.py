"""PII redaction: which spans are addresses (patterns), finding them in Arrow batches (find), and the edits a
later step applies to see the redacted text (`curate.rundir.edits`, shared by every text-editing stage; re-exported
here). The `pii` stage (curate/stages/pii.py) ties them together on the editing template (curate/stages/edit.py)."""

from curate.rundir.edits import EDITS, apply_edits, apply_spans, apply_steps, read_spans, spans_by_id
from curate.pii.find import find_spans
from curate.pii.patterns import DEFAULT_PLACEHOLDERS, KINDS, build_kinds

__all__ = ["DEFAULT_PLACEHOLDERS", "EDITS", "KINDS", "apply_edits", "apply_spans", "apply_steps", "build_kinds", "find_spans", "read_spans",
           "spans_by_id"]
