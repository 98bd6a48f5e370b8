"""``tpubuild render``: its one record (builder/commands/verb.py); the work is builder/commands/pipeline_cmds.py."""

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
    p.add_argument("--allow-wipe", action="store_true",
                   help="let the seeder wipe a shared PD that already holds data (_ALLOW_WIPE=true)")
    p.add_argument("--format", choices=("yaml", "json"), default="yaml", help="output format (default: yaml)")


def body(args: argparse.Namespace) -> int | None:
    from builder.commands.pipeline_cmds import run_render

    return run_render(args)


VERB = Verb(
    name="render",
    group=Group.USER,
    rank=3,
    help="print the Cloud Build config of an action",
    description="Print the exact Cloud Build config an action submits (offline, no credentials).",
    epilog="""examples:
  tpubuild render --action create > pipeline.yaml
  tpubuild render --action update --tpu --format json
  tpubuild render --action auto --applied old.env  the pipeline auto would submit (nothing: exit 0)""",
    arguments=arguments,
    body=body,
)
