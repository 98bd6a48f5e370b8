"""Print the exact Cloud Build config an action submits (offline, no credentials).

examples:
  tpubuild render --action create > pipeline.yaml
  tpubuild render --action update --tpu --format json
  tpubuild render --action create --format mermaid  the step graph as a picture (GitHub draws it in markdown)
  tpubuild render --action auto --applied old.env  the pipeline auto would submit (nothing: exit 0)
  tpubuild render --scripts out/                    also write the step scripts that ship as files
"""

from __future__ import annotations

import argparse

from builder.commands.parser import add_compare
from builder.commands.verb import Group, Verb, work


def arguments(p: argparse.ArgumentParser) -> None:
    add_compare(p)
    p.add_argument("--allow-wipe", action="store_true",
                   help="let the seeder wipe a shared PD that already holds data (_ALLOW_WIPE=true)")
    p.add_argument("--format", choices=("yaml", "json", "mermaid"), default="yaml",
                   help="output format (default: yaml); mermaid: the step graph as a Mermaid flowchart, grouped by "
                        "module, edges = waitFor (docs/pipeline.md, \"The pipeline as a picture\")")
    p.add_argument("--scripts", metavar="DIR", default="",
                   help="write the step scripts too long for an argument, which submit packs in the source, "
                        "under DIR (DIR/.tpubuild/scripts/...)")


VERB = Verb.of(__doc__, "render", Group.USER, 3, "print the Cloud Build config of an action",
               arguments, work("builder.commands.pipeline_cmds", "run_render"))
