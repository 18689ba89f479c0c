"""YAML as curate reads it: safe, and a key given twice in one mapping is an error, not the last one silently
winning (`threshold: 0.5` ... `threshold: 0.9` further down is a mistake a user should see).

Anchors and aliases are fine, but a document whose aliases expand it past `MAX_EXPANDED` nodes more than it
writes (a "billion laughs" bomb: a dozen levels of anchors, each aliasing the one before ten times) is refused
before anything is built: the loader itself shares aliased nodes, but interpolation, validation and the
resolved pipeline walk the expanded tree. An alias that contains itself is refused too (it never ends)."""

from __future__ import annotations

import yaml


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A mapping names the same key twice; `problem_mark` is where the second one is."""


MAX_EXPANDED = 100_000   # nodes that aliases may add to a document beyond those it writes


class AliasBombError(yaml.constructor.ConstructorError):
    """Aliases expand the document past `MAX_EXPANDED` nodes, or an alias contains itself."""


class StrictLoader(yaml.SafeLoader):
    def construct_document(self, node):
        _check_expansion(node)
        return super().construct_document(node)

    def construct_mapping(self, node, deep=False):
        seen = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor` merges, which may repeat on purpose
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:  # an unhashable key: SafeLoader says so itself
                continue
            if first is not key_node:
                raise DuplicateKeyError(None, None, f"duplicate key {key!r} (first at line {first.start_mark.line + 1}); "
                                                    "give each key once", key_node.start_mark)
        return super().construct_mapping(node, deep)


def _check_expansion(root) -> None:
    """Count the nodes of the document as its consumers will see it (every alias expanded), each distinct node
    once with memoisation, so the count itself stays linear in what was written."""
    size: dict[int, int] = {}
    open_: set[int] = set()
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            open_.discard(key)
            children = _children(node)
            size[key] = 1 + sum(size[id(c)] for c in children)
            if size[key] - len(size) > MAX_EXPANDED:
                raise AliasBombError(None, None, f"aliases expand this document past {MAX_EXPANDED:,} more nodes than "
                                                 "it writes (an alias bomb?); write the values out", node.start_mark)
            continue
        if key in size:
            continue
        if key in open_:
            raise AliasBombError(None, None, "an alias refers to a node that contains it (it would never end)",
                                 node.start_mark)
        open_.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node) if id(c) not in size)


def _children(node) -> list:
    if isinstance(node, yaml.SequenceNode):
        return node.value
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def load(text: str):
    """`yaml.safe_load`, refusing duplicate keys."""
    return yaml.load(text, Loader=StrictLoader)


def one_line(exc: yaml.YAMLError) -> str:
    """A YAML error as `line L, column C: problem`."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    return f"{where}{getattr(exc, 'problem', None) or str(exc).splitlines()[0]}"
