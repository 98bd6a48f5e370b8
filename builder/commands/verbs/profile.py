"""Capture an XLA profile of the running training on one host (torch_xla's profiler server, port 9012)
into <MOUNT_POINT>/nfs_share/profiles/<env>/<timestamp>/ and the state bucket, in TensorBoard's
plugins/profile layout, and print how to open it.

examples:
  tpubuild profile                          10 s on host 0
  tpubuild profile --host 2 --duration 30s
  tpubuild profile --dry-run
"""

from __future__ import annotations

import argparse

from builder.commands.verb import Group, Verb, work


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", type=int, default=0, metavar="N", help="host number, 0 .. hosts-1 (default 0)")
    p.add_argument("--duration", default="10s", help="how long to trace: 10s, 1500ms, 2m (default 10s, at most 300s)")
    p.add_argument("--dry-run", action="store_true", help="print the commands instead of running them")


VERB = Verb.of(__doc__, "profile", Group.USER, 10, "capture an XLA profile of the running training (TensorBoard/XProf layout)",
               arguments, work("builder.commands.observe", "run_profile"))
