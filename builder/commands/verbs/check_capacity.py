"""The pipeline's first step (run by Cloud Build, before anything billed): read the TPU quota of the
slice's generation, path and provisioning model (Cloud Quotas) and, on mig, the reservation or
calendar-mode request it consumes (Compute Engine), and refuse (exit 1, one line) when they cannot
hold the slice. `tpubuild plan --check` runs the same check from a workstation.

example (what the pipeline runs):
  tpubuild check-capacity
"""

from __future__ import annotations

import argparse

from builder.commands.verb import Group, Verb, work


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--beside-applied", action="store_true",
                   help="make-before-break: the quota must also hold the applied slice (read from the state bucket) "
                        "while the new one is created beside it")


VERB = Verb.of(__doc__, "check-capacity", Group.PIPELINE, 2, "the pipeline's first step: refuse (exit 1) when the TPU quota cannot hold the slice",
               arguments, work("builder.commands.capacity", "cmd_check_capacity"))
