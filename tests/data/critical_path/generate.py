"""The create pipelines' step graphs as rendered just before "the slice first" (commit 4f9afa7's
parent), read from that commit's goldens: ``tests/unit/test_critical_path.py`` scores them with
today's step minutes and pins ``benchmarks/critical_path.py``'s modelled ``before`` of the slice
column to them.

    python tests/data/critical_path/generate.py   # rewrites before_slice_first.json (needs the git history)

Only each step's ``id`` and ``waitFor`` are kept: a step's minutes come from its id
(builder/catalogue/durations.py) and today's values file, and the graph is all the walk reads.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]
REV = "4f9afa7^"
OUT = Path(__file__).with_name("before_slice_first.json")


def _show(path: str) -> str:
    return subprocess.run(["git", "show", f"{REV}:{path}"], cwd=REPO, check=True, capture_output=True, text=True).stdout


def main() -> None:
    names = subprocess.run(["git", "ls-tree", "--name-only", f"{REV}:tests/data/golden/"], cwd=REPO, check=True,
                           capture_output=True, text=True).stdout.split()
    out: dict[str, object] = {"rev": subprocess.run(["git", "rev-parse", "--short", REV], cwd=REPO, check=True,
                                                    capture_output=True, text=True).stdout.strip(), "graphs": {}}
    for name in names:
        if not name.endswith(".json") or name.startswith("node"):
            continue
        rendered = json.loads(_show(f"tests/data/golden/{name}")).get("render --action create")
        if not rendered or rendered["rc"] != 0:
            continue
        values = "values.env" if name == "values.json" else f"examples/{name.removesuffix('.json')}.env"
        steps = yaml.safe_load(rendered["stdout"])["steps"]
        out["graphs"][values] = [{"id": st["id"], "waitFor": st.get("waitFor", ["-"])} for st in steps]
    lines = [f"  {json.dumps(v)}: [\n" + ",\n".join(f"    {json.dumps(st)}" for st in g) + "\n  ]"
             for v, g in out["graphs"].items()]
    OUT.write_text(f'{{"rev": {json.dumps(out["rev"])}, "graphs": {{\n' + ",\n".join(lines) + "\n}}\n")


if __name__ == "__main__":
    main()
