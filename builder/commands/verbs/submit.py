"""Pack the source (content-addressed tarball in the state bucket) and run an action's pipeline on
Cloud Build under the environment lock. Without --wait it returns once the build is created.

examples:
  tpubuild submit --action create --wait
  tpubuild submit --action update --tpu --wait
  tpubuild submit --action auto          apply what values.env changed since the last build
  tpubuild submit --action destroy --wait  no --allow-data-loss: destroy snapshots the shared PD and backs up Filestore (on tiers with backups) itself

Run `tpubuild plan` with the same flags first: it shows before -> after and the cost.
"""

from __future__ import annotations

import argparse

from builder.commands.parser import add_action, add_flags, add_scope
from builder.commands.verb import Group, Verb, work


def arguments(p: argparse.ArgumentParser) -> None:
    add_action(p, what="the action to run")
    add_scope(p)
    add_flags(p, {
        "--allow-wipe": "let the seeder overwrite a shared PD that already holds data",
        "--wait": "stream the build's step states and exit with its outcome",
    })


VERB = Verb.of(__doc__, "submit", Group.USER, 4, "pack the source and run the action's pipeline on Cloud Build",
               arguments, work("builder.commands.submit", "cmd_submit"))
