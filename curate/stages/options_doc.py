"""Every option a pipeline file takes, as Markdown tables made from the `Field` declarations themselves, so the
docs (`docs/options.md`, `curate options`) cannot drift from what the loader accepts: a new option, bound or
doc string shows up at the next `curate options --markdown > docs/options.md` (a test keeps the file in step)."""

from __future__ import annotations

from curate.config.pipeline import EXECUTION_KEYS, SOURCE_KEYS
from curate.common.schema import REQUIRED, Field
from curate.stages.registry import BUILT_IN, STAGES

_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", list: "list", dict: "mapping"}


def rows(fields: dict[str, Field], prefix: str = "") -> list[tuple[str, str, str, str]]:
    """(option, type, default, what it does) for each field, nested fixed-key mappings as `parent.child`."""
    out = []
    for name, spec in fields.items():
        key = f"{prefix}{name}"
        out.append((key, _type(spec), _default(spec), _what(spec)))
        nested = spec.keys or (spec.item.keys if spec.item is not None and spec.item.keys else None)
        if nested:
            out += rows(nested, f"{key}.<name>." if spec.keys is None else f"{key}.")
    return out


def table(fields: dict[str, Field]) -> str:
    lines = ["| option | type | default | what it does |", "|---|---|---|---|"]
    lines += [f"| `{k}` | {t} | {d} | {w} |" for k, t, d, w in rows(fields)]
    return "\n".join(lines)


def markdown() -> str:
    """The whole options reference: sources, execution, then every stage kind curate ships, by name (a plugin's
    kinds are listed by `curate options` where the plugin is loaded, not in curate's own page)."""
    parts = ["# Options", "",
             "Generated from the option declarations by `curate options --markdown`; a test checks this file is current.",
             "Each step of a pipeline's `stages:` takes its kind's options (`use:` names the kind when the step has its own name);",
             "`enabled: false` switches any step off. Keys of a `sources.<name>` entry and of `execution:` come first.", "",
             "## sources.<name>", "", table(SOURCE_KEYS), "", "## execution", "", table(EXECUTION_KEYS), ""]
    for kind in sorted(BUILT_IN):
        cls = STAGES[kind]
        parts += [f"## {kind}", "", summary(cls), ""]
        parts += [table(cls.OPTIONS) if cls.OPTIONS else "(no options)", ""]
    return "\n".join(parts)


def summary(cls) -> str:
    """A stage kind in one line: its class's docstring, else its module's (a stage module says what it is)."""
    import sys

    doc = (cls.__doc__ or sys.modules[cls.__module__].__doc__ or "").strip()
    return doc.split("\n\n")[0].replace("\n", " ")


def _type(spec: Field) -> str:
    names = [_TYPES.get(t, getattr(t, "__name__", str(t))) for t in spec.types]
    if spec.item is not None and list in spec.types:
        names = [f"list of {_type(spec.item)}" if n == "list" else n for n in names]
    return " or ".join(names) + (" or null" if spec.nullable else "")


def _default(spec: Field) -> str:
    if spec.default is REQUIRED:
        return "required"
    value = spec.default() if callable(spec.default) else spec.default
    return "null" if value is None else f"`{value!r}`".replace("|", "\\|")


def _what(spec: Field) -> str:
    notes = [spec.doc] if spec.doc else []
    if spec.min is not None or spec.max is not None:
        low = "" if spec.min is None else f"{spec.min} <= "
        high = "" if spec.max is None else f" <= {spec.max}"
        notes.append(f"range: {low}value{high}")
    if spec.choices is not None:
        choices = spec.choices() if callable(spec.choices) else spec.choices
        notes.append("one of " + ", ".join(f"`{c}`" for c in choices))
    return "; ".join(notes).replace("|", "\\|").replace("\n", " ")
