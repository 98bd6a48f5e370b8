"""Show when the environment's TTL destroys the TPU, or push it back.

examples:
  tpubuild ttl show                  when the TTL destroys the TPU
  tpubuild ttl extend 4h             four more hours (counted from the current expiry)
  tpubuild ttl extend 2d --values examples/vm-v4-32.env

The TTL (ENV_TTL_HOURS in values.env) is a Cloud Scheduler job created with the TPU; when it fires
it runs the destroy build of the TPU only (Filestore, the disk and the buckets stay). A later
apply does not move an extended TTL back; a replaced TPU gets a new one.
"""

from __future__ import annotations

import argparse

from builder.commands.verb import Group, Verb, work


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("verb", choices=("show", "extend"), metavar="show|extend", help="show, or extend DURATION")
    p.add_argument("duration", nargs="?", metavar="DURATION", help="for extend: hours or days, like 4h or 2d")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")


VERB = Verb.of(__doc__, "ttl", Group.USER, 12, "show or extend the environment's TTL (ENV_TTL_HOURS)",
               arguments, work("builder.commands.ttl", "run_ttl"))
