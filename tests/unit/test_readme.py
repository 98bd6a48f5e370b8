"""README.md stays a front page (at most 200 lines, the two set-up commands, every doc it names
there), docs/README.md reaches every doc, and docs/resize.md's pasted ``tpubuild plan`` output
("See before you pay", README's quickstart resize) is what plan prints today for the story it
tells, from the shipped files (tools/readme_plan.py produces it; the TTL's timestamp, which moves
with the clock, is masked). When the plan text changes on purpose, refresh the block with
``python tools/readme_plan.py --write``."""

from __future__ import annotations

import importlib.util
import re
import shlex

from tests.conftest import REPO

_spec = importlib.util.spec_from_file_location("readme_plan", REPO / "tools/readme_plan.py")
assert _spec and _spec.loader
readme_plan = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(readme_plan)


def test_readme_plan_output_is_what_plan_prints_for_the_story() -> None:
    text = readme_plan.README.read_text()
    start, end = readme_plan.block_span(text)
    assert readme_plan.mask(text[start:end]) == readme_plan.mask(readme_plan.render()), (
        "docs/resize.md's 'See before you pay' output is stale: run python tools/readme_plan.py --write")


def test_readme_names_the_command_and_the_edits_of_the_story() -> None:
    prose = readme_plan.README.read_text()
    prose = " ".join(prose[prose.index(readme_plan.HEADING):readme_plan.block_span(prose)[0]].split())
    assert f"`tpubuild {shlex.join(readme_plan.ARGV)}`" in prose
    for key, value in {**readme_plan.APPLIED_EDITS, **readme_plan.CHANGE}.items():
        assert f'`{key}="{value}"`' in prose, key


def test_the_mask_hides_only_the_clock() -> None:
    line = "note: ttl: ...; a TPU created now is destroyed at about 2026-11-23T15:08Z"
    assert readme_plan.mask(line) == "note: ttl: ...; a TPU created now is destroyed at about <time>"
    assert readme_plan.mask("retrieved 2026-11-23") == "retrieved 2026-11-23"


_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_readme_is_a_front_page() -> None:
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    assert "pip install -e . && tpubuild plan\n" in blocks
    assert "pip install -e '.[test]' && python -m pytest\n" in blocks
    assert '`TPU_ACCELERATOR_TYPE="v3-128"`' in text and "(docs/resize.md)" in text
    assert "(docs/README.md)" in text and "(docs/ci.md)" in text


def test_every_link_of_the_readme_and_the_docs_resolves() -> None:
    for page in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for target in _LINK.findall(page.read_text()):
            if re.fullmatch(r"[\w./-]+", target):  # a path, not a URL or a pattern in prose
                assert (page.parent / target).exists(), f"{page.relative_to(REPO)}: {target} does not exist"


def test_the_docs_index_reaches_every_doc_once_in_order() -> None:
    text = (REPO / "docs/README.md").read_text()
    linked = [t for t in _LINK.findall(text) if not t.startswith("..")]
    docs = {p.name for p in (REPO / "docs").glob("*.md")} - {"README.md"}
    assert sorted(linked) == sorted(docs), set(docs) ^ set(linked)
    headings = [h.strip() for h in re.findall(r"^## (.+)$", text, re.M)]
    assert headings == ["Start", "See before you pay", "Capacity", "Models and training", "Recovery", "Safety",
                        "Many environments and GitOps", "Reference", "Architecture, for contributors"]
