"""Mermaid's own parser (the npm package ``mermaid`` under Node, headless: tools/mermaid/parse.mjs)
reads every picture tpubuild draws: each shipped example's create and update
(``render --format mermaid``), the GitOps plan build's plan.md picture, and every ```mermaid block
of the docs. A broken diagram is refused, so the check is a parse, not a formality. The edges'
match with ``waitFor`` is tests/unit/test_mermaid.py's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support import mermaid
from tests.support.mermaid import BUILDABLE, drawn

pytestmark = pytest.mark.slow  # one Node process, about 3 s


def _diagrams() -> dict[str, str]:
    out = {f"{path} {action}": drawn(path, action)[3] for path in BUILDABLE for action in ("create", "update")}
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for i, body in enumerate(re.findall(r"^```mermaid\n(.*?)^```$", doc.read_text(), re.M | re.S)):
            out[f"{doc.relative_to(REPO)} #{i}"] = body
    return out


def test_mermaid_parses_every_picture_and_refuses_a_broken_one(tmp_path: Path, cli) -> None:
    mermaid.require_parser()
    values = tmp_path / "values.env"
    values.write_text((REPO / "values.env").read_text().replace('TPU_ACCELERATOR_TYPE="v3-32"', 'TPU_ACCELERATOR_TYPE="v3-128"'))
    code, page, err = cli("--values", values, "plan", "--action", "update", "--tpu", "--applied", REPO / "values.env",
                          "--format", "markdown")
    assert code == 0, err
    [picture] = re.findall(r"^```mermaid\n(.*?)^```$", page, re.M | re.S)
    diagrams = {**_diagrams(), "plan.md": picture,
                "broken (the control)": "flowchart TD\n  a[\"x\"] -->\n"}
    verdicts = mermaid.parse(diagrams, tmp_path)
    assert verdicts.pop("broken (the control)").startswith("error Parse error")
    bad = {name: v for name, v in verdicts.items() if not v.startswith("ok flowchart")}
    assert not bad, bad
    assert len(verdicts) >= 2 * len(BUILDABLE) + 5
