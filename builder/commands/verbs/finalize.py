"""The pipeline's last step (run by Cloud Build): record the applied snapshot and release the lock.

example (what the pipeline runs):
  tpubuild finalize --build-id "$BUILD_ID" --action create
"""

from __future__ import annotations

import argparse

from builder.commands.verb import Group, Verb, work


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--build-id", required=True, metavar="ID")
    p.add_argument("--action", required=True, metavar="ACTION")


VERB = Verb.of(__doc__, "finalize", Group.PIPELINE, 4, "the pipeline's last step: record the applied snapshot, release the lock",
               arguments, work("builder.commands.finalize", "cmd_finalize"))
