"""Show what an action will do: every module before -> after, which hosts are recreated, the order of
the steps, and the environment's hourly cost.

examples:
  tpubuild plan                                  what create does, with its hourly cost
  tpubuild plan --action update --tpu            what update --tpu changes against the applied snapshot
  tpubuild plan --action auto --applied old.env  what GitOps auto would do, offline
  tpubuild plan --format json | jq .before_after
  tpubuild plan --action update --tpu --format markdown > plan.md   money table and pipeline picture
  tpubuild plan --all                            every environment of the repository: auto's action, cost

The comparison (before -> after) uses --applied FILE (a values.env as last applied), else the
applied snapshot read from the state bucket when Google credentials exist (read-only, no lock),
else none (every module is shown as created).
"""

from __future__ import annotations

import argparse

from builder.commands.parser import add_compare, add_flags
from builder.commands.verb import Group, Verb, work


def arguments(p: argparse.ArgumentParser) -> None:
    add_compare(p)
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text",
                   help="output format (default: text); markdown: the cost as a table and the pipeline as a Mermaid "
                        "picture, the GitOps plan build's plan.md")
    add_flags(p, {
        "--check": "also run the pipeline's capacity check (the TPU quota, read from Cloud Quotas): exit 1 when it "
                   "cannot hold the slice",
        "--all": "every environment of the repository (values.env and environments/*/values.env) in one table: the "
                 "action auto would take and the hourly cost before -> after",
    })


VERB = Verb.of(__doc__, "plan", Group.USER, 2, "show what an action will change, in what order, and its cost",
               arguments, work("builder.commands.pipeline_cmds", "run_plan"))
