"""``tpubuild bootstrap``: its one record (builder/commands/verb.py); the work is builder/commands/bootstrap.py."""

from __future__ import annotations

import argparse

from builder.commands.verb import Group, Verb


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--output", default="cloudbuild.yaml", metavar="PATH",
                   help="where to write it ('-' for stdout; default ./cloudbuild.yaml)")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 when the file differs from what would be written")


def body(args: argparse.Namespace) -> int | None:
    from builder.commands.bootstrap import cmd_bootstrap

    return cmd_bootstrap(args)


VERB = Verb(
    name="bootstrap",
    group=Group.ADMIN,
    rank=2,
    help="write the root cloudbuild.yaml (the file users submit) for values.env's environment",
    description="Write the root cloudbuild.yaml, the file users submit with `gcloud builds submit` (its one "
        "step runs `tpubuild dispatch`).",
    epilog="examples:\n  tpubuild bootstrap\n  tpubuild bootstrap --check       exit 1 when cloudbuild.yaml is stale\n"
        "  tpubuild bootstrap --output -     print it",
    arguments=arguments,
    body=body,
)
