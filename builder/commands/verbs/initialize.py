"""``tpubuild initialize``: its one record (builder/commands/verb.py); the work is builder/commands/initialize.py."""

from __future__ import annotations

import argparse

from builder.commands.verb import Group, Verb


def arguments(p: argparse.ArgumentParser) -> None:
    """None beyond every verb's --values and --debug."""


def body(args: argparse.Namespace) -> int | None:
    from builder.commands.initialize import cmd_initialize

    return cmd_initialize(args)


VERB = Verb(
    name="initialize",
    group=Group.ADMIN,
    rank=1,
    help="create the buckets, upload the workspace, build the builder image",
    description="Create the environment's state bucket (Terraform state, lock, applied snapshot) and dataset "
        "bucket, versioned with uniform access and public access prevention, and upload the workspace "
        "the hosts read at boot; then the builder image the pipelines run their tpubuild steps in: its "
        "Artifact Registry repository and, unless this version's tag is there, a Cloud Build build of it "
        "(waited for). No Terraform; safe to run again.",
    epilog="examples:\n  tpubuild initialize\n  tpubuild initialize --values examples/vm-v4-32.env",
    arguments=arguments,
    body=body,
)
