"""``tpubuild train``: its one record (builder/commands/verb.py); the work is builder/commands/train.py."""

from __future__ import annotations

import argparse

from builder.commands.verb import Group, Verb
from builder.model_registry import DEFAULT_MODEL


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL", help=f"a folder under models/, e.g. {DEFAULT_MODEL}")
    p.add_argument("--dry-run", action="store_true", help="print the exact per-host command lines and the script")
    p.add_argument("--metrics", action="store_true",
                   help="every host rewrites torch_xla's metrics report every minute (default: at the end of the run)")


def body(args: argparse.Namespace) -> int | None:
    from builder.commands.train import run_train

    return run_train(args)


VERB = Verb(
    name="train",
    group=Group.USER,
    rank=6,
    help="launch a model (models/<MODEL>) on every host of the TPU",
    description="Launch a model (models/<MODEL>/launcher.py) on every host of the TPU: its software, its data "
        "preparation and the training itself (docs/models.md).",
    epilog=f"examples:\n  tpubuild train {DEFAULT_MODEL} --dry-run   the exact per-host command lines\n"
        f"  tpubuild train {DEFAULT_MODEL}\n  tpubuild logs --host 0 -f",
    arguments=arguments,
    body=body,
)
