"""Word lists shipped with the package (no download at run time).

- ``data/stopwords_en.txt``: the English stop-word set RPv2 uses for
  ``rps_doc_stop_word_fraction`` (RPv2 ``core/quality_signals/utils/stop_words.py``,
  itself taken from github.com/6/stopwords-json, 570 words). datatrove 0.10.1 only
  ships Gopher's 8 stop words (``gopher_quality_filter.STOP_WORDS``), which is a
  different signal, so it is not used here.
- ``data/ldnoobw/{en,fr,it,es,de}.txt``: the List of Dirty, Naughty, Obscene and
  Otherwise Bad Words (github.com/LDNOOBW, CC-BY-4.0), see ``data/SOURCES.md``.

RPv2 matches both lists exactly as stored: stop words against case-kept raw
words, LDNOOBW entries against lowercased, NFD-normalised words, so entries with
capitals or precomposed accents never match. We keep that behaviour.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

LDNOOBW_LANGUAGES = ("en", "fr", "it", "es", "de")


def _read_lines(name: str) -> list[str]:
    text = resources.files(__package__).joinpath("data", *name.split("/")).read_text(encoding="utf-8")
    return text.splitlines()


@cache
def stop_words(language: str = "en") -> frozenset[str]:
    """RPv2's stop-word set for ``language`` (only English is shipped)."""
    if language != "en":
        raise ValueError(f"no stop-word list shipped for language {language!r}; pass stop_words=")
    return frozenset(w for w in _read_lines("stopwords_en.txt") if w)


@cache
def ldnoobw_words(language: str = "en") -> frozenset[str]:
    """The LDNOOBW entries for ``language``, loaded like RPv2 (``line.strip()``).

    Languages outside en/fr/it/es/de get an empty set, as in RPv2.
    """
    if language not in LDNOOBW_LANGUAGES:
        return frozenset()
    return frozenset(line.strip() for line in _read_lines(f"ldnoobw/{language}.txt"))
