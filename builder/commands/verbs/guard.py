"""Read a saved Terraform plan (terraform show -json) and refuse it (exit 1) when it destroys or
replaces Filestore or the shared PD without --allow-data-loss (run by the pipeline).

example (what the pipeline runs):
  tpubuild guard --plan-json plans/filestore.json --module filestore --action update
"""

from __future__ import annotations

import argparse

from builder.commands.verb import Group, Verb, work
from builder.planning.guard import ACTIONS, MODULES


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--plan-json", required=True, metavar="FILE",
                   help="output of 'terraform show -json PLANFILE'")
    p.add_argument("--module", required=True, metavar="M", help=f"plan module: {', '.join(MODULES)}")
    p.add_argument("--action", required=True, metavar="A", help=f"pipeline action: {', '.join(ACTIONS)}")
    p.add_argument("--allow-data-loss", action="store_true",
                   help="let create/update destroy or replace Filestore or the shared PD (_ALLOW_DATA_LOSS=true)")


VERB = Verb.of(__doc__, "guard", Group.PIPELINE, 3, "refuse a saved Terraform plan that would destroy data (run by the pipeline)",
               arguments, work("builder.commands.guard", "run_guard"))
