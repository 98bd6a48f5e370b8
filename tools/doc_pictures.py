#!/usr/bin/env python3
"""The pipeline pictures in docs/*.md, generated from the pipelines themselves.

A picture is a ```mermaid block between two markers; the first names the ``tpubuild render``
arguments that draw it::

    <!-- pipeline-picture: --values examples/mig-v6e-16-failover.env --action create -->
    ```mermaid
    ...
    ```
    <!-- /pipeline-picture -->

:func:`render` runs ``tpubuild <args> render --format mermaid`` with the tpubuild of this checkout
(offline, no credentials). ``tests/unit/test_doc_pictures.py`` compares every block with it, so a
picture in the docs cannot drift from the DAG. Usage::

    python tools/doc_pictures.py            # exit 1 and a diff when a picture is stale
    python tools/doc_pictures.py --write    # redraw every picture
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
BLOCK = re.compile(r"(<!-- pipeline-picture: (?P<args>[^>]*?) -->\n```mermaid\n)(?P<body>.*?)(```\n<!-- /pipeline-picture -->)",
                   re.S)


def pictures(text: str) -> list[re.Match[str]]:
    """The picture blocks of one document's ``text``."""
    return list(BLOCK.finditer(text))


def argv(args: str) -> list[str]:
    """``tpubuild``'s arguments for a marker's ``args``."""
    return ["render", *shlex.split(args), "--format", "mermaid"]


def render(args: str) -> str:
    """What ``tpubuild render ... --format mermaid`` prints for a marker's ``args``, today."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GOOGLE_", "CLOUDSDK_", "STORAGE_EMULATOR", "TPUBUILD_"))}
    env.update(NO_COLOR="1", PYTHONIOENCODING="utf-8",
               PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])]))
    proc = subprocess.run([sys.executable, "-m", "builder", *argv(args)], cwd=REPO, env=env, capture_output=True,
                          text=True, encoding="utf-8", timeout=300)
    if proc.returncode != 0:
        raise SystemExit(f"tpubuild {' '.join(argv(args))} failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


def redrawn(text: str) -> str:
    """``text`` with every picture drawn again."""
    return BLOCK.sub(lambda m: m.group(1) + render(m.group("args")) + m.group(4), text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="redraw every picture in docs/")
    args = parser.parse_args()
    stale = 0
    for doc in sorted(DOCS.glob("*.md")):
        text = doc.read_text()
        if not pictures(text):
            continue
        fresh = redrawn(text)
        if fresh == text:
            continue
        if args.write:
            doc.write_text(fresh)
            print(f"{doc.relative_to(REPO)}: redrawn")
            continue
        stale += 1
        sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), fresh.splitlines(True),
                                                   str(doc.relative_to(REPO)), "tpubuild render --format mermaid"))
    if stale:
        print("a pipeline picture in docs/ is stale: run python tools/doc_pictures.py --write", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
