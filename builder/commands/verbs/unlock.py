"""``tpubuild unlock``: its one record (builder/commands/verb.py); the work is builder/commands/state.py."""

from __future__ import annotations

import argparse

from builder.commands.verb import Group, Verb


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--force", action="store_true",
                   help="required; refused while Cloud Build reports a build of this environment QUEUED or WORKING")
    p.add_argument("--even-if-running", action="store_true",
                   help="with --force: break the lock even while a build of this environment runs")


def body(args: argparse.Namespace) -> int | None:
    from builder.commands.state import cmd_unlock

    return cmd_unlock(args)


VERB = Verb(
    name="unlock",
    group=Group.ADMIN,
    rank=4,
    help="break the environment lock",
    description="Remove the environment lock left by a build that is gone. Only with --force: make sure no build "
        "of this environment is running (Cloud Build console, or `tpubuild status`).",
    epilog="examples:\n  tpubuild status                 who holds the lock, and since when\n"
        "  tpubuild unlock --force",
    arguments=arguments,
    body=body,
)
