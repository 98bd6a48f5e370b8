"""``tpubuild status``: its one record (builder/commands/verb.py); the work is builder/commands/state.py."""

from __future__ import annotations

import argparse

from builder.commands.verb import Group, Verb


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")


def body(args: argparse.Namespace) -> int | None:
    from builder.commands.state import cmd_status

    return cmd_status(args)


VERB = Verb(
    name="status",
    group=Group.USER,
    rank=5,
    help="TPU, Filestore, MIG, Terraform state, lock and applied snapshot",
    description="Ask the APIs what is running: the TPU (on mig: the slice, its MIG and workload policy), Filestore, "
        "the workers' MIG of a legacy node, the Terraform state, the dashboard's URL, the lock, "
        "the applied snapshot and, with ENV_TTL_HOURS, when the TTL destroys the TPU. Exit 1 when a part "
        "could not be read (everything readable is still shown).",
    epilog="examples:\n  tpubuild status\n  tpubuild status --format json | jq .ttl",
    arguments=arguments,
    body=body,
)
