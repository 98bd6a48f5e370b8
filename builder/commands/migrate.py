"""``tpubuild migrate [--output FILE]``: rewrite a values.env onto its generation's recommended path
(a seed-era or TPU Node file as TPU VM; a TPU VM file of a Compute Engine generation as mig).

In place by default, keeping the original as ``<file>.bak``; ``--output FILE`` writes there and
leaves the original alone. Prints a before/after summary. A file with nothing to migrate is left
untouched (no .bak either), so running it twice changes nothing. See builder/config/migrate.py.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from builder.config import load_text
from builder.config.loader import read_text
from builder.config.migrate import migrate_text
from builder.facts.errors import BadInput
from builder.facts.generations import api


def _write(path: Path, text: str) -> None:
    """Write through a temporary file in the same folder and rename: never a half-written file."""
    tmp = path.with_name(f".{path.name}.tpubuild-tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except IsADirectoryError:
        raise BadInput(f"{path}: is a directory; pass a file path to --output") from None
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise BadInput(f"{path}: cannot write ({exc.strerror}); choose a writable --output") from None


def run_migrate(args: argparse.Namespace) -> int:
    source = Path(args.values)
    text = read_text(source)
    result = migrate_text(text, source)
    target = Path(args.output) if args.output else source
    if not result.changed:
        print(f"{source}: nothing to migrate (already on its path, without seed-era script paths)")
        for note in result.notes:
            print(f"note: {note}")
        if args.output and target.resolve() != source.resolve():
            _write(target, text)
            print(f"copied unchanged to {target}")
        return 0
    if not args.output:
        backup = source.with_name(source.name + ".bak")
        _write(backup, text)
    _write(target, result.text)

    done = api(load_text(result.text, target).arch)
    print(f"{source}: migrated to {done.label}{'' if not args.output else f' into {target}'}"
          f"{'' if args.output else f' (original kept as {backup})'}")
    print("before → after:")
    for change in result.changes:
        print(f"  {change}")
    for note in result.notes:
        print(f"note: {note}")
    print(f"next: tpubuild validate --values {target} && tpubuild plan --values {target}", file=sys.stdout)
    return 0
