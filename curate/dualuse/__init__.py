"""Dual-use content filtering (Deep Ignorance, O'Brien et al. 2025): stage 1, the blocklist.

    bl = Blocklist.from_file(demo_terms_path())    # or Blocklist(["term", ...])
    bl.escalate(texts)          # bool per text: >= DEFAULT_ESCALATE_AT (2) distinct terms
    bl.count(texts, stop_at=2)  # int32 distinct terms per text, min(count, stop_at)
    bl.scan(texts)              # (counts, list<string> of the distinct terms, sorted)
    bl.fingerprint              # sha256 of the normalised term set

Matching is ``term in text.casefold()`` for case-folded terms; see :mod:`.blocklist`.
"""

from .blocklist import DEFAULT_ESCALATE_AT, Blocklist
from .terms import demo_terms_path, fingerprint, load_terms, normalise_terms

__all__ = ["Blocklist", "DEFAULT_ESCALATE_AT", "demo_terms_path", "fingerprint", "load_terms", "normalise_terms"]
