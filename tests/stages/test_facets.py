"""A stage is one vertical slice: its summary lines, report sections, kernels and manifest facts live with it, so
the runner, the report's builder and the manifest stage name no stage kind (issue 29 item 1)."""

import ast
from pathlib import Path

import curate
from curate.stages.registry import BUILT_IN, STAGES

ROOT = Path(curate.__file__).parent
GENERIC = [*sorted((ROOT / "runner").glob("*.py")), ROOT / "report" / "build.py", ROOT / "stages" / "manifest.py"]
KIND_RECORDS = {"ClassifyRecord", "DualUseRecord", "DedupRecord", "DecontaminateRecord", "EditsRecord", "MinhashRecord"}


def named_kinds(path: Path) -> set[str]:
    """Stage kinds a module names: string constants (not docstrings) equal to a kind, imports of a stage's module
    or of a record only one kind publishes. Capabilities it NEEDS or USES (`mix`) are not kinds."""
    tree = ast.parse(path.read_text())
    docstrings = {id(n.body[0].value) for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef))
                  and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    needs = {c.value for n in ast.walk(tree) if isinstance(n, ast.Assign) and any(getattr(t, "id", "") in ("NEEDS", "USES") for t in n.targets)
             for c in ast.walk(n.value) if isinstance(c, ast.Constant)}
    own = {c.value for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "stage" for c in n.args
           if isinstance(c, ast.Constant)}
    found = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
             and id(n) not in docstrings and n.value in BUILT_IN} - needs - own
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.module:
            found |= {n.module.rsplit(".", 1)[-1] for _ in [0] if n.module.startswith("curate.stages.")
                      and n.module.rsplit(".", 1)[-1] in BUILT_IN}
            found |= {a.name for a in n.names if a.name in KIND_RECORDS}
    return found


def test_the_runner_report_builder_and_manifest_name_no_stage_kind():
    named = {path.name: kinds for path in GENERIC if (kinds := named_kinds(path))}
    assert named == {}


def test_the_check_sees_a_named_kind(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text('"""dedup in a docstring is fine."""\nfrom curate.rundir import DedupRecord\nif kind == "pii":\n    pass\n')
    assert named_kinds(probe) == {"DedupRecord", "pii"}


def test_every_built_in_stage_declares_facets_of_the_one_type():
    from curate.stages.facets import Facets

    for name in BUILT_IN:
        facets = STAGES[name].FACETS
        assert issubclass(facets, Facets), name
        for ref in facets.REPORT:
            module, attr = ref.split(":")
            section = getattr(__import__(module, fromlist=[attr]), attr)
            assert section.anchor and callable(section.gather) and callable(section.render), ref
