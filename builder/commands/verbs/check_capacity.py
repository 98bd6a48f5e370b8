"""The pipeline's first step (run by Cloud Build, before anything billed): read the TPU quota of the
slice's generation, path and provisioning model (Cloud Quotas) and, on mig, the reservation or
calendar-mode request it consumes (Compute Engine), and refuse (exit 1, one line) when they cannot
hold the slice. `tpubuild plan --check` runs the same check from a workstation. An update placed with
--move-to ZONE (dispatch's, the root build's _MOVE_TO) passes it on, so the quota is read where the slice goes.

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
    # an update's build placed by --move-to (dispatch, _MOVE_TO): the quota of the zone it moves to
    p.add_argument("--move-to", default=None, metavar="ZONE",
                   help="the update moves the environment to ZONE of the ZONE list: check the quota there")
    p.set_defaults(action="update")  # the pipeline that checks is an update's when it moves


VERB = Verb.of(__doc__, "check-capacity", Group.PIPELINE, 2, "the pipeline's first step: refuse (exit 1) when the TPU quota cannot hold the slice",
               arguments, work("builder.commands.capacity", "cmd_check_capacity"))
