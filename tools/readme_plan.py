#!/usr/bin/env python3
"""docs/resize.md's "See before you pay" output (README's quickstart resize), produced from the shipped files.

The story: the shipped values.env with the TTL on (:data:`APPLIED_EDITS`) was applied and saved as
``applied.env``; then the pod grows (:data:`CHANGE`). :func:`render` runs :data:`ARGV` in a
temporary folder holding those two files, as a user would (no credentials, no colour), with the
tpubuild of this checkout. ``tests/unit/test_readme.py`` compares docs/resize.md's block with it, the
TTL's timestamp masked (:func:`mask`: it moves with the clock). Usage::

    python tools/readme_plan.py            # exit 1 and a diff when docs/resize.md is stale
    python tools/readme_plan.py --write    # rewrite the block in docs/resize.md
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "docs/resize.md"
#: The heading whose first ```text block is the pasted output.
HEADING = "## See before you pay"
#: What was applied: the shipped values.env with these keys set.
APPLIED_EDITS = {"ENV_TTL_HOURS": "8"}
#: The change the story plans, on top of what was applied.
CHANGE = {"TPU_ACCELERATOR_TYPE": "v3-128"}
#: The command, run in the folder holding values.env and applied.env.
ARGV = ["plan", "--action", "update", "--tpu", "--applied", "applied.env"]
_TTL_TIME = re.compile(r"(destroyed at about )\d{4}-\d\d-\d\dT\d\d:\d\dZ")


def edit(text: str, keys: dict[str, str]) -> str:
    """``text`` (a values.env) with each of ``keys`` set: its line replaced, or appended."""
    lines = text.splitlines()
    for key, value in keys.items():
        line = f'{key}="{value}"'
        found = [i for i, ln in enumerate(lines) if re.match(rf"\s*(export\s+)?{key}\s*=", ln)]
        if found:
            lines[found[0]] = line
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


def render() -> str:
    """What :data:`ARGV` prints for the story, today."""
    shipped = (REPO / "values.env").read_text()
    applied = edit(shipped, APPLIED_EDITS)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GOOGLE_", "CLOUDSDK_", "STORAGE_EMULATOR", "TPUBUILD_"))}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "applied.env").write_text(applied)
        (folder / "values.env").write_text(edit(applied, CHANGE))
        env.update(CLOUDSDK_CONFIG=str(folder / "gcloud"), NO_COLOR="1", PYTHONIOENCODING="utf-8",
                   PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])]))
        proc = subprocess.run([sys.executable, "-m", "builder", *ARGV], cwd=folder, env=env,
                              capture_output=True, text=True, encoding="utf-8", timeout=300)
    if proc.returncode != 0:
        raise SystemExit(f"tpubuild {' '.join(ARGV)} failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


def block_span(text: str) -> tuple[int, int]:
    """Start and end offsets of the pasted output in docs/resize.md's ``text``."""
    start = text.index("```text\n", text.index(HEADING)) + len("```text\n")
    return start, text.index("```", start)


def mask(output: str) -> str:
    """``output`` without what moves with the clock (when a TPU created now would be destroyed)."""
    return _TTL_TIME.sub(r"\1<time>", output)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite docs/resize.md's block")
    args = parser.parse_args()
    text = README.read_text()
    start, end = block_span(text)
    fresh = render()
    if args.write:
        README.write_text(text[:start] + fresh + text[end:])
        print(f"{README.relative_to(REPO)}: written")
        return 0
    if mask(text[start:end]) == mask(fresh):
        print(f"{README.relative_to(REPO)}: up to date")
        return 0
    sys.stdout.writelines(difflib.unified_diff(text[start:end].splitlines(True), fresh.splitlines(True),
                                               str(README.relative_to(REPO)), "tpubuild " + " ".join(ARGV)))
    print("docs/resize.md is stale: run python tools/readme_plan.py --write", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
