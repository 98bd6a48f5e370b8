"""Launch a model (models/<MODEL>/launcher.py) on every host of the TPU: its software, its data
preparation and the training itself (docs/models.md).

examples:
  tpubuild train {model} --dry-run   the exact per-host command lines
  tpubuild train {model}
  tpubuild logs --host 0 -f
"""

from __future__ import annotations

import argparse

from builder.commands.verb import Group, Verb, work
from builder.config.model_registry import DEFAULT_MODEL


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL", help=f"a folder under models/, e.g. {DEFAULT_MODEL}")
    p.add_argument("--dry-run", action="store_true", help="print the exact per-host command lines and the script")
    p.add_argument("--metrics", action="store_true",
                   help="every host rewrites torch_xla's metrics report every minute (default: at the end of the run)")


VERB = Verb.of(__doc__, "train", Group.USER, 6, "launch a model (models/<MODEL>) on every host of the TPU",
               arguments, work("builder.commands.train", "run_train"), model=DEFAULT_MODEL)
