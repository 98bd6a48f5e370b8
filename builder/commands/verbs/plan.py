"""``tpubuild plan``: its one record (builder/commands/verb.py); the work is builder/commands/pipeline_cmds.py."""

from __future__ import annotations

import argparse

from builder.actions import Action
from builder.commands.parser import MODULE_NAMES, add_action, add_scope
from builder.commands.verb import Group, Verb


def arguments(p: argparse.ArgumentParser) -> None:
    add_action(p, default=Action.CREATE)
    add_scope(p)
    p.add_argument("--only", metavar="MODULES", default=None,
                   help=f"update only these comma-separated modules, as GitOps auto does: "
                        f"{', '.join(MODULE_NAMES)}")
    p.add_argument("--applied", metavar="FILE", default=None,
                   help="compare with this values.env as last applied ('none': compare with nothing); "
                        "default: the applied snapshot in the state bucket when credentials exist")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    p.add_argument("--check", action="store_true",
                   help="also run the pipeline's capacity check (the TPU quota, read from Cloud Quotas): exit 1 "
                        "when it cannot hold the slice")
    p.add_argument("--all", action="store_true",
                   help="every environment of the repository (values.env and environments/*/values.env) in one "
                        "table: the action auto would take and the hourly cost before -> after")


def body(args: argparse.Namespace) -> int | None:
    from builder.commands.pipeline_cmds import run_plan

    return run_plan(args)


VERB = Verb(
    name="plan",
    group=Group.USER,
    rank=2,
    help="show what an action will change, in what order, and its cost",
    description=("Show what an action will do: every module before -> after, which hosts are "
                 "recreated, the order of the steps, and the environment's hourly cost."),
    epilog="""examples:
  tpubuild plan                                  what create does, with its hourly cost
  tpubuild plan --action update --tpu            what update --tpu changes against the applied snapshot
  tpubuild plan --action auto --applied old.env  what GitOps auto would do, offline
  tpubuild plan --format json | jq .before_after
  tpubuild plan --all                            every environment of the repository: auto's action, cost

The comparison (before -> after) uses --applied FILE (a values.env as last applied), else the
applied snapshot read from the state bucket when Google credentials exist (read-only, no lock),
else none (every module is shown as created).""",
    arguments=arguments,
    body=body,
)
