"""The docs a user reads stay true: the option tables are the declarations, the README stays short, and every
page it links to exists."""

import re
from pathlib import Path

from curate.cli import main
from curate.stages.options_doc import markdown, rows
from curate.stages.registry import BUILT_IN, STAGES

ROOT = Path(__file__).resolve().parents[1]


def test_options_page_is_generated_from_the_declarations():
    page = (ROOT / "docs" / "options.md").read_text()
    assert page == markdown() + "\n", "docs/options.md is stale: run `curate options --markdown > docs/options.md`"


def test_every_stage_kind_and_option_is_in_the_page():
    page = markdown()
    for kind in BUILT_IN:
        assert f"\n## {kind}\n" in page
        for option, *_ in rows(STAGES[kind].OPTIONS):
            assert f"| `{option}` |" in page


def test_options_command(capsys):
    assert main(["options", "dedup"]) == 0
    assert "| `threshold` |" in capsys.readouterr().out
    assert main(["options", "dedp"]) == 2
    assert "did you mean 'dedup'" in capsys.readouterr().err


def test_readme_is_short_and_its_links_resolve():
    readme = (ROOT / "README.md").read_text()
    assert readme.count("\n") <= 320
    for page in ["docs/" + p.name for p in (ROOT / "docs").glob("*.md")]:
        text = (ROOT / page).read_text()
        for target in re.findall(r"\]\(([^)#]+\.md)\)", text):
            assert (ROOT / "docs" / target).resolve().exists(), f"{page} links to a missing {target}"
    for target in re.findall(r"\]\(([^)#:]+)\)", readme):
        assert (ROOT / target).exists(), f"README links to a missing {target}"
