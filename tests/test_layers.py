"""docs/architecture.md's layer order holds: every module of curate imports only from its own layer or below."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "curate"

# lowest first, as docs/architecture.md draws them; a module belongs to the first prefix that matches it
LAYERS = [
    ("common", ["curate.io", "curate.errors", "curate.common", "curate._version", "curate.terminate", "curate.run_folders", "curate.plugins",
                "curate.packaged"]),
    ("libraries", ["curate.readers", "curate.dedup", "curate.signals", "curate.tokens", "curate.models", "curate.dualuse",
                   "curate.decontam", "curate.pii", "curate.substring", "curate.manifest", "curate.sample", "curate.sql", "curate.recipes"]),
    ("rundir", ["curate.rundir"]),
    ("config", ["curate.config"]),
    ("stage contract", ["curate.stages.base", "curate.stages.shard", "curate.stages.edit", "curate.stages.facets",
                        "curate.stages.phase", "curate.stages.resources", "curate.stages.registry", "curate.stages.reads"]),
    ("stages", ["curate.stages"]),
    ("runner", ["curate.runner"]),
    ("top", ["curate.cli", "curate.query", "curate.train_quality", "curate.report", "curate.__main__", "curate"]),
]


def layer_of(module: str) -> int:
    for rank, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    raise AssertionError(f"{module} is in no layer of docs/architecture.md")


def imports(path: Path, module: str):
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("curate"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                yield f"{base}.{node.module}" if node.module else base
            elif node.module and node.module.startswith("curate"):
                yield node.module


def test_no_module_imports_a_layer_above_its_own():
    wrong = []
    for path in sorted(ROOT.rglob("*.py")):
        module = "curate." + ".".join(path.relative_to(ROOT).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        own = layer_of(module)
        for target in imports(path, module):
            if target != "curate" and layer_of(target) > own:
                wrong.append(f"{module} ({LAYERS[own][0]}) imports {target} ({LAYERS[layer_of(target)][0]})")
    assert not wrong, "\n".join(wrong)
