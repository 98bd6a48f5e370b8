"""Byte-for-byte golden renderings: ``render`` and ``plan`` print exactly what
``tests/data/golden/`` holds for every shipped values file × action × scope, the GitOps
selections, the allow flags and ``auto`` against a changed copy. A refactor that changes a
single byte of a pipeline or a plan fails here; a change that means to, regenerates them
(``python tests/data/golden/generate.py``) and says so in its commit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support.golden import assert_matches_golden, every_recording, load_generator

golden = load_generator("golden")


def test_every_values_file_has_golden_renderings() -> None:
    shipped = {"values.env", *(f"examples/{p.name}" for p in (REPO / "examples").glob("*.env"))}
    assert shipped <= set(golden.FILES)
    for path in golden.FILES:
        assert golden.golden_path(path).is_file(), f"no golden renderings for {path}; run generate.py"


@pytest.mark.parametrize("path", golden.FILES)
def test_renderings_match_golden(path: str, tmp_path: Path) -> None:
    assert_matches_golden(golden, path, tmp_path)


def test_golden_cases_cover_success_and_refusal() -> None:
    """The corpus is not all errors: each architecture renders pipelines, and refusals are kept."""
    for path, data in every_recording(golden):
        ok = [n for n, r in data.items() if r["rc"] == 0 and n.startswith("render") and "steps:" in r["stdout"]]
        refused = [n for n, r in data.items() if r["rc"] == 2]
        assert refused, path
        if "node" not in path:
            assert len(ok) >= 5, path
        else:  # legacy: only destroy renders
            assert ok and all("destroy" in n for n in ok), ok


_STEPS = "Pipeline steps, as `tpubuild render` lists them:"


def _plan_text_steps(text: str) -> list[str]:
    """The step ids ``tpubuild plan``'s text names, expanded (``mig: plan → guard`` → mig-plan, mig-guard)."""
    block = text.split(_STEPS + "\n", 1)[1].split("\n\n", 1)[0]
    ids = []
    for line in block.splitlines():
        line = line.strip()
        if ": " in line:
            module, kinds = line.split(": ", 1)
            ids.extend(f"{module}-{kind}" for kind in kinds.split(" → "))
        else:
            ids.append(line)
    return ids


@pytest.mark.parametrize("path", golden.FILES)
def test_plan_text_and_rendered_steps_match_one_to_one(path: str, tmp_path: Path) -> None:
    """For every case that renders a pipeline, ``plan`` (text and JSON) names exactly the steps
    ``render`` emits, in the same order, each waiting for the same steps."""
    import yaml

    data = golden.render_all(path, tmp_path)
    compared = 0
    for name, rendered in data.items():
        if not name.startswith("render ") or rendered["rc"] != 0 or "steps:" not in str(rendered["stdout"]):
            continue
        if "--format json" in name or "auto" in name:
            continue
        text = data["plan " + name.removeprefix("render ")]
        if text["rc"] != 0:  # plan takes no --allow-wipe
            assert "--allow-wipe" in name, name
            continue
        build = yaml.safe_load(str(rendered["stdout"]))
        ids = [st["id"] for st in build["steps"]]
        assert _plan_text_steps(str(text["stdout"])) == ids, (path, name)
        compared += 1
    if "node" not in path:  # node: create is refused (legacy)
        as_json = json.loads(str(data["plan --format json --action create"]["stdout"]))
        build = json.loads(str(data["render --format json --action create"]["stdout"]))
        assert [(st["id"], st["after"] or ["-"]) for st in as_json["steps"]] == \
            [(st["id"], st["waitFor"]) for st in build["steps"]]
    assert compared >= (1 if "node" in path else 5), (path, compared)
