"""YAML as curate reads it: safe, and a key given twice in one mapping is an error, not the last one silently
winning (`threshold: 0.5` ... `threshold: 0.9` further down is a mistake a user should see)."""

from __future__ import annotations

import yaml


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A mapping names the same key twice; `problem_mark` is where the second one is."""


class StrictLoader(yaml.SafeLoader):
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


def load(text: str):
    """`yaml.safe_load`, refusing duplicate keys."""
    return yaml.load(text, Loader=StrictLoader)


def one_line(exc: yaml.YAMLError) -> str:
    """A YAML error as `line L, column C: problem`."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    return f"{where}{getattr(exc, 'problem', None) or str(exc).splitlines()[0]}"
