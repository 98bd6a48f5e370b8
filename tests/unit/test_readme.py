"""README.md's pasted ``tpubuild plan`` output ("See before you pay") is what plan prints today for
the story it tells, from the shipped files (tools/readme_plan.py produces it; the TTL's timestamp,
which moves with the clock, is masked). When the plan text changes on purpose, refresh the block
with ``python tools/readme_plan.py --write``."""

from __future__ import annotations

import importlib.util
import shlex

from tests.conftest import REPO

_spec = importlib.util.spec_from_file_location("readme_plan", REPO / "tools/readme_plan.py")
assert _spec and _spec.loader
readme_plan = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(readme_plan)


def test_readme_plan_output_is_what_plan_prints_for_the_story() -> None:
    text = (REPO / "README.md").read_text()
    start, end = readme_plan.block_span(text)
    assert readme_plan.mask(text[start:end]) == readme_plan.mask(readme_plan.render()), (
        "README.md's 'See before you pay' output is stale: run python tools/readme_plan.py --write")


def test_readme_names_the_command_and_the_edits_of_the_story() -> None:
    prose = (REPO / "README.md").read_text()
    prose = " ".join(prose[prose.index(readme_plan.HEADING):readme_plan.block_span(prose)[0]].split())
    assert f"`tpubuild {shlex.join(readme_plan.ARGV)}`" in prose
    for key, value in {**readme_plan.APPLIED_EDITS, **readme_plan.CHANGE}.items():
        assert f'`{key}="{value}"`' in prose, key


def test_the_mask_hides_only_the_clock() -> None:
    line = "note: ttl: ...; a TPU created now is destroyed at about 2026-11-23T15:08Z"
    assert readme_plan.mask(line) == "note: ttl: ...; a TPU created now is destroyed at about <time>"
    assert readme_plan.mask("retrieved 2026-11-23") == "retrieved 2026-11-23"
