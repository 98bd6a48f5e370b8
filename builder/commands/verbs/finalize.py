"""``tpubuild finalize``: its one record (builder/commands/verb.py); the work is builder/commands/finalize.py."""

from __future__ import annotations

import argparse

from builder.commands.verb import Group, Verb


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--build-id", required=True, metavar="ID")
    p.add_argument("--action", required=True, metavar="ACTION")


def body(args: argparse.Namespace) -> int | None:
    from builder.commands.finalize import cmd_finalize

    return cmd_finalize(args)


VERB = Verb(
    name="finalize",
    group=Group.PIPELINE,
    rank=4,
    help="the pipeline's last step: record the applied snapshot, release the lock",
    description="The pipeline's last step (run by Cloud Build): record the applied snapshot and release the lock.",
    epilog="example (what the pipeline runs):\n  tpubuild finalize --build-id \"$BUILD_ID\" --action create",
    arguments=arguments,
    body=body,
)
