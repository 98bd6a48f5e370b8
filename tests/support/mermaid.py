"""Mermaid's own parser under Node (tools/mermaid/parse.mjs: the npm package ``mermaid``, headless,
with jsdom for the window its DOMPurify import needs; .ci/run installs tools/mermaid/package-lock.json
and links its node_modules there), and a reader of builder/render/mermaid.py's flowcharts."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import EXAMPLES, REPO, require

TOOL = REPO / "tools" / "mermaid"
#: The shipped values files a pipeline is drawn for (a legacy node file builds nothing).
SHIPPED = ["values.env", *sorted(f"examples/{p.name}" for p in EXAMPLES.glob("*.env")),
           "models/torchtpu/examples/values.env"]
BUILDABLE = [p for p in SHIPPED if 'TPU_ARCH="node"' not in (REPO / p).read_text()]


def drawn(path: str, action: str, **flags: bool) -> tuple[Any, Any, dict[str, Any], str]:
    """``path``'s settings, the plan of ``action``, its rendered Build and that Build's picture."""
    from builder.config import load
    from builder.planning.plan import make_plan
    from builder.render.mermaid import flowchart
    from builder.render.pipeline import render

    settings = load(REPO / path)
    plan = make_plan(settings, action, **flags)
    config = render(settings, plan)
    return settings, plan, config, flowchart(settings, plan, config)


def require_parser() -> None:
    """Skip (fail in CI) without node or the installed packages."""
    require("node", shutil.which("node") is not None, "apt-get install nodejs")
    require("mermaid (npm)", (TOOL / "node_modules" / "mermaid" / "package.json").is_file()
            and (TOOL / "node_modules" / "jsdom" / "package.json").is_file(),
            "cd tools/mermaid && npm install (.ci/run does, into its cache)")


def parse(diagrams: dict[str, str], folder: Path) -> dict[str, str]:
    """Name → Mermaid's verdict ("ok <diagram type>" or "error <message>") for each diagram, in one
    Node process."""
    files = {}
    for i, (name, text) in enumerate(diagrams.items()):
        files[name] = folder / f"{i}.mmd"
        files[name].write_text(text)
    proc = subprocess.run(["node", str(TOOL / "parse.mjs"), *map(str, files.values())], capture_output=True,
                          text=True, timeout=300)
    verdicts = dict(line.split(": ", 1) for line in proc.stdout.splitlines() if ": " in line)
    assert proc.returncode in (0, 1) and len(verdicts) == len(files), proc.stdout + proc.stderr
    return {name: verdicts[str(path)] for name, path in files.items()}


def labels(text: str) -> dict[str, str]:
    """A flowchart's node ids → the step ids their labels name."""
    return {m.group(1): m.group(2) for m in re.finditer(r'^\s*(\w+)[\[({/]+"([^"<]+)', text, re.M)
            if not m.group(1).startswith("mod_")}


def edges(text: str) -> list[tuple[str, str]]:
    """The ``(from, to)`` step ids of a flowchart's ``-->`` edges, in order, repeats kept."""
    names = labels(text)
    return [(names[a], names[b]) for a, b in re.findall(r"^\s*(\w+) --> (\w+)$", text, re.M)]


def groups(text: str) -> dict[str, str]:
    """Step id → the subgraph (module) that holds it; '' outside every subgraph."""
    out, current = {}, ""
    names = labels(text)
    for line in text.splitlines():
        if m := re.match(r'\s*subgraph mod_\w+\["([^"]+)"\]', line):
            current = m.group(1)
        elif line.strip() == "end":
            current = ""
        elif (m := re.match(r"\s*(\w+)[\[({/]", line)) and m.group(1) in names:
            out[names[m.group(1)]] = current
    return out
