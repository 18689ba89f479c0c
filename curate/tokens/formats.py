"""Token formats by name (the pack step's `formats:`): one file per format, each a `TokenFormat` registered with
`@token_format`.

A format writes one docs shard's packed documents beside a prefix (`write`), concatenates a source's shard files in
shard order into the source's files (`merge`), and names the files it puts beside a prefix (`suffixes`). The pack
stage, the run directory and the manifest ask this registry and never name a format. A built-in format's module is
listed in BUILT_IN (imported when the registry is first read); outside code registers by importing its module.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod

from .batch import Tokens
from .docmap import Located
from .pack import Packed

BUILT_IN = ("curate.tokens.megatron", "curate.tokens.datatrove_ds")
"""The modules of the formats curate ships."""

_FORMATS: dict[str, "TokenFormat"] = {}


class TokenFormat(ABC):
    """How packed tokens become a trainer's files: `write` one shard, `merge` a source's shards, name the `suffixes`."""

    name = ""
    suffixes: tuple[str, ...] = ()   # the files beside a prefix, e.g. (".bin", ".idx"); the manifest hashes them all
    map_suffix = ""                  # its document map beside a prefix (curate/tokens/docmap.py); "" when it has none

    @abstractmethod
    def write(self, prefix: str, tokens: Tokens, packed: Packed | None, *, vocab_size: int, tokenizer_name: str,
              layout: str = "chunks") -> int:
        """Write `tokens` (documents with their specials) as packed by `packed` (None: one sequence per document)
        beside `prefix`; returns the tokens written."""

    @abstractmethod
    def merge(self, prefix: str, parts: list[str], *, vocab_size: int, tokenizer_name: str) -> None:
        """Concatenate the files this format wrote beside each of `parts` (shard prefixes, in order) beside `prefix`."""

    def locate(self, tokens: Tokens, packed: Packed | None, layout: str = "chunks") -> "Located | None":
        """Where each chunk of `write`'s output lies, in file order, for the document map (None: no map)."""
        return None

    def files(self, prefix: str) -> list[str]:
        return [prefix + suffix for suffix in self.suffixes]

    def all_suffixes(self) -> tuple[str, ...]:
        """Its files and its document map, as a pack step writes them beside a prefix."""
        return (*self.suffixes, *([self.map_suffix] if self.map_suffix else []))


def token_format(cls: type[TokenFormat]) -> type[TokenFormat]:
    """Register a format class under its `name` (a class decorator); a second class under a taken name is refused."""
    if not cls.name or not cls.suffixes:
        raise ValueError(f"token format {cls.__name__} names no name or no suffixes")
    known = _FORMATS.get(cls.name)
    if known is not None and type(known) is not cls:
        raise ValueError(f"two token formats are called {cls.name!r}: {type(known).__name__} and {cls.__name__}")
    _FORMATS[cls.name] = cls()
    return cls


def formats() -> dict[str, TokenFormat]:
    """Every known format by name."""
    for module in BUILT_IN:
        importlib.import_module(module)
    return _FORMATS


def names() -> list[str]:
    """The names a pack step's `formats:` accepts (for its option's choices), sorted."""
    return sorted(formats())


def get(name: str) -> TokenFormat:
    return formats()[name]


def unregister(name: str) -> None:
    """Forget a format (a test's own, once done)."""
    _FORMATS.pop(name, None)
