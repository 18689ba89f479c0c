"""PII redaction: which spans are addresses (patterns) and finding them in Arrow batches (find). The `pii` stage
(curate/stages/pii.py) records them on the text-editing template (curate/stages/edit.py); a later step applies
them through `curate.rundir.edits` (`apply_spans` re-applies them to an original)."""

from curate.pii.find import find_spans
from curate.pii.patterns import DEFAULT_PLACEHOLDERS, KINDS, build_kinds

__all__ = ["DEFAULT_PLACEHOLDERS", "KINDS", "build_kinds", "find_spans"]
