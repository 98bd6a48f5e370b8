"""The step of the root cloudbuild.yaml (run by Cloud Build, not by people): takes the raw
substitution strings, checks them, and runs the action like `submit --wait`.

example (what cloudbuild.yaml runs):
  tpubuild dispatch --action "$_BUILD_ACTION" --tpu "$_TPU" --mig "$_MIG" --allow-data-loss "$_ALLOW_DATA_LOSS" --allow-wipe "$_ALLOW_WIPE" --move-to "$_MOVE_TO"
"""

from __future__ import annotations

import argparse

from builder.commands.verb import Group, Verb, work


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--action", required=True, metavar="_BUILD_ACTION")
    p.add_argument("--tpu", default="default", metavar="_TPU")
    p.add_argument("--mig", default="default", metavar="_MIG")
    p.add_argument("--allow-data-loss", default="false", metavar="_ALLOW_DATA_LOSS")
    p.add_argument("--allow-wipe", default="false", metavar="_ALLOW_WIPE")
    p.add_argument("--move-to", default="", metavar="ZONE",
                   help="update: place the environment in ZONE of the ZONE list (the health build's move)")


VERB = Verb.of(__doc__, "dispatch", Group.PIPELINE, 1, "the root cloudbuild.yaml's step: raw substitution strings in, action run",
               arguments, work("builder.commands.submit", "cmd_dispatch"))
