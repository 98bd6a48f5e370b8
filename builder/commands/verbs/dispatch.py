"""``tpubuild dispatch``: its one record (builder/commands/verb.py); the work is builder/commands/submit.py."""

from __future__ import annotations

import argparse

from builder.commands.verb import Group, Verb


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--action", required=True, metavar="_BUILD_ACTION")
    p.add_argument("--tpu", default="default", metavar="_TPU")
    p.add_argument("--mig", default="default", metavar="_MIG")
    p.add_argument("--allow-data-loss", default="false", metavar="_ALLOW_DATA_LOSS")
    p.add_argument("--allow-wipe", default="false", metavar="_ALLOW_WIPE")


def body(args: argparse.Namespace) -> int | None:
    from builder.commands.submit import cmd_dispatch

    return cmd_dispatch(args)


VERB = Verb(
    name="dispatch",
    group=Group.PIPELINE,
    rank=1,
    help="the root cloudbuild.yaml's step: raw substitution strings in, action run",
    description="The step of the root cloudbuild.yaml (run by Cloud Build, not by people): takes the raw "
        "substitution strings, checks them, and runs the action like `submit --wait`.",
    epilog="example (what cloudbuild.yaml runs):\n  tpubuild dispatch --action \"$_BUILD_ACTION\" --tpu \"$_TPU\" "
        "--mig \"$_MIG\" --allow-data-loss \"$_ALLOW_DATA_LOSS\" --allow-wipe \"$_ALLOW_WIPE\"",
    arguments=arguments,
    body=body,
)
