"""``tpubuild stop``: its one record (builder/commands/verb.py); the work is builder/commands/train.py."""

from __future__ import annotations

import argparse

from builder.commands.verb import Group, Verb


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help="model package (default: MODEL in values.env)")
    p.add_argument("--dry-run", action="store_true", help="print the commands instead of running them")
    p.add_argument("--probe", action="store_true",
                   help="stop nothing: say whether the model trains and when it last wrote its checkpoint")


def body(args: argparse.Namespace) -> int | None:
    from builder.commands.train import run_stop

    return run_stop(args)


VERB = Verb(
    name="stop",
    group=Group.USER,
    rank=9,
    help="stop the training on every host and free the TPU",
    description="Stop the training on every host and free the TPU (the environment stays up).",
    epilog="examples:\n  tpubuild stop\n  tpubuild stop --dry-run\n"
        "  tpubuild stop --probe          is it training, and when it last wrote its checkpoint (stops nothing)",
    arguments=arguments,
    body=body,
)
