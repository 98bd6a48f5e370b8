#!/usr/bin/env python3
"""The table of capacity modes in docs/capacity.md, produced from the one place each fact lives:
what a mode means (``builder.config.offers.MODES``, which ``tpubuild plan`` prints too) and which
generations offer it on which path (the generation records, ``builder/data/tpu_offers.json``).
``tests/unit/test_capacity_modes.py`` compares the docs with it. Usage::

    python tools/capacity_table.py            # exit 1 and a diff when docs/capacity.md is stale
    python tools/capacity_table.py --write    # rewrite the table between its markers
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from builder.config.offers import DOC_VALUES, MODES  # noqa: E402
from builder.facts import generations  # noqa: E402

DOC = REPO / "docs" / "capacity.md"
BEGIN, END = "<!-- modes table: tools/capacity_table.py -->", "<!-- end of modes table -->"


def _cell(text: str) -> str:
    return text.format(**DOC_VALUES).replace("|", "\\|")


def _gen(gen: generations.Generation, mode: str) -> str:
    """A generation in a row; calendar mode adds its zones and who makes the request."""
    cal = gen.calendar
    if mode != "calendar" or cal is None:
        return gen.name
    return f"{gen.name} ({'Terraform' if cal.terraform else 'gcloud'}; {', '.join(cal.zones)})"


def table() -> str:
    rows = ["| mode | path: generations | rendered as | starts | runs | costs | at the end |",
            "|---|---|---|---|---|---|---|"]
    for name, mode in MODES.items():
        where = "; ".join(
            f"{path}: {', '.join(_gen(g, name) for g in gens)}" for path in ("mig", "vm")
            if (gens := [g for g in generations.on_path(path) if name in g.provisioning_on(path)]))
        rows.append(f"| `{name}` | {where} | " + " | ".join(
            _cell(part) for part in (mode.rendered, mode.starts, mode.runs, mode.costs, mode.ends)) + " |")
    return "\n".join(rows) + "\n"


def current() -> str:
    text = DOC.read_text(encoding="utf-8")
    return text[text.index(BEGIN) + len(BEGIN) + 1:text.index(END)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite the table in docs/capacity.md")
    args = ap.parse_args()
    want = table()
    if args.write:
        text = DOC.read_text(encoding="utf-8")
        DOC.write_text(text[:text.index(BEGIN) + len(BEGIN) + 1] + want + text[text.index(END):], encoding="utf-8")
        return 0
    have = current()
    if have != want:
        sys.stdout.writelines(difflib.unified_diff(have.splitlines(True), want.splitlines(True), "docs", "MODES"))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
