#!/usr/bin/env python3
"""Rewrite the TPU generation lists that shell and Terraform keep, from the generation records.

``env_setup/scripts/startup.sh`` and ``modules/*/variables.tf`` cannot import Python, yet each
checks a value against a list of generation facts (accelerator type prefixes, MIG machine types,
boot disk types). Those lines are generated from the records (builder/facts/generations.py, the rows of
builder/data/tpu_offers.json); tests/unit/test_generations.py fails while any of them differs from
what this tool would write. After adding or changing a generation record::

    python tools/sync_generations.py          # rewrite the lines
    python tools/sync_generations.py --check  # exit 1 and name each stale file
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from builder.facts import generations  # noqa: E402


@dataclass(frozen=True)
class Line:
    """One generated line: ``pattern`` (a regex with the line's indentation as group 1) matches it
    exactly once in ``path``; ``text()`` is what follows the indentation."""

    path: str
    pattern: str
    text: Callable[[], str]


def _prefixes(path: str) -> list[str]:
    return [g.prefix for g in generations.on_path(path)]


def _words(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def _machine_types() -> list[str]:
    return sorted({m for g in generations.on_path("mig") if g.mig for m in g.mig.machine_types()})


def _boot_disks() -> list[str]:
    return list(dict.fromkeys(g.mig.boot_disk_type for g in generations.on_path("mig") if g.mig))


def _hcl_list(items: list[str]) -> str:
    return "[" + ", ".join(f'"{i}"' for i in items) + "]"


STARTUP = "env_setup/scripts/startup.sh"
TPU_VM = "modules/tpu_vm/variables.tf"
TPU_MIG = "modules/tpu_mig/variables.tf"

LINES: tuple[Line, ...] = (
    Line(STARTUP, r'^( *)\[\[ "\$ACCELERATOR_TYPE" =~ .*$',
         lambda: f'[[ "$ACCELERATOR_TYPE" =~ ^({"|".join(_prefixes("mig"))})-[0-9]+$ ]] ||'),
    Line(STARTUP, r"^( *)die \"metadata tpubuild-accelerator-type .*$",
         lambda: "die \"metadata tpubuild-accelerator-type '${ACCELERATOR_TYPE}' is not a "
                 f'{_words(_prefixes("mig"))} slice"'),
    Line(TPU_VM, r"^( *)condition += can\(regex\(.*var\.accelerator_type\)\)$",
         lambda: f'condition     = can(regex("^({"|".join(_prefixes("vm"))})-[0-9]+$", var.accelerator_type))'),
    Line(TPU_MIG, r"^( *)condition += can\(regex\(.*var\.accelerator_type\)\)$",
         lambda: f'condition     = can(regex("^({"|".join(_prefixes("mig"))})-[0-9]+$", var.accelerator_type))'),
    Line(TPU_MIG, r"^( *)error_message = \"accelerator_type must be a .*$",
         lambda: f'error_message = "accelerator_type must be a {_words(_prefixes("mig"))} slice such as '
                 f'{generations.on_path("mig")[0].types()[0]}."'),
    Line(TPU_MIG, r"^( *)condition += contains\(\[.*\], var\.machine_type\)$",
         lambda: f"condition     = contains({_hcl_list(_machine_types())}, var.machine_type)"),
    Line(TPU_MIG, r"^( *)error_message = \"machine_type must be one of .*$",
         lambda: f'error_message = "machine_type must be one of {", ".join(_machine_types())}."'),
    Line(TPU_MIG, r"^( *)condition += contains\(\[.*\], var\.boot_disk_type\)$",
         lambda: f"condition     = contains({_hcl_list(_boot_disks())}, var.boot_disk_type)"),
    Line(TPU_MIG, r"^( *)error_message = \"boot_disk_type must be .*$",
         lambda: f'error_message = "boot_disk_type must be {_words(_boot_disks())}."'),
)


def generated(repo: Path = REPO) -> dict[str, str]:
    """path → its text with every generated line as the records say."""
    out: dict[str, str] = {}
    for line in LINES:
        text = out.get(line.path) or (repo / line.path).read_text(encoding="utf-8")
        pattern = re.compile(line.pattern, re.M)
        hits = pattern.findall(text)
        if len(hits) != 1:
            raise SystemExit(f"{line.path}: {len(hits)} lines match {line.pattern!r}, expected one; "
                             "update tools/sync_generations.py LINES")
        out[line.path] = pattern.sub(lambda m: m.group(1) + line.text(), text)
    return out


def stale(repo: Path = REPO) -> list[str]:
    """The files whose generated lines differ from the records."""
    return [p for p, text in generated(repo).items() if (repo / p).read_text(encoding="utf-8") != text]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file is stale")
    args = ap.parse_args(argv)
    if args.check:
        for path in stale():
            print(f"{path}: its TPU generation lists differ from the records; run python tools/sync_generations.py")
        return 1 if stale() else 0
    for path, text in generated().items():
        if (REPO / path).read_text(encoding="utf-8") != text:
            (REPO / path).write_text(text, encoding="utf-8")
            print(f"rewrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
