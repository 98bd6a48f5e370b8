"""Ask the APIs what is running: the TPU (on mig: the slice, its MIG and workload policy), Filestore,
the workers' MIG of a legacy node, the Terraform state, the dashboard's URL, the lock, the applied
snapshot and, with ENV_TTL_HOURS, when the TTL destroys the TPU. Exit 1 when a part could not be
read (everything readable is still shown).

examples:
  tpubuild status
  tpubuild status --format json | jq .ttl
"""

from __future__ import annotations

import argparse

from builder.commands.verb import Group, Verb, work


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")


VERB = Verb.of(__doc__, "status", Group.USER, 5, "TPU, Filestore, MIG, Terraform state, lock and applied snapshot",
               arguments, work("builder.commands.state", "cmd_status"))
