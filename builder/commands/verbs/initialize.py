"""Create the environment's state bucket (Terraform state, lock, applied snapshot) and dataset bucket,
versioned with uniform access and public access prevention; the builder service account (the roles
the environment's modules and pipelines need) and the read-only account pull-request plans run as;
upload the workspace the hosts read at boot; then the builder image the pipelines run their tpubuild
steps in: its Artifact Registry repository and, unless this version's tag is there, a Cloud Build
build of it (waited for). No Terraform; safe to run again. --check writes nothing: it reports each
account or role that is missing (one line each, exit 1).

examples:
  tpubuild initialize
  tpubuild initialize --check
  tpubuild initialize --values examples/vm-v4-32.env
"""

from __future__ import annotations

import argparse

from builder.commands.verb import Group, Verb, work


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--check", action="store_true",
                   help="write nothing; report each role the builder account lacks (one line each, exit 1)")


VERB = Verb.of(__doc__, "initialize", Group.ADMIN, 1, "create the buckets, upload the workspace, build the builder image",
               arguments, work("builder.commands.initialize", "cmd_initialize"))
