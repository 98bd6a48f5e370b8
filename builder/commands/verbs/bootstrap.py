"""Write the root cloudbuild.yaml, the file users submit with `gcloud builds submit` (its one step
runs `tpubuild dispatch`).

examples:
  tpubuild bootstrap
  tpubuild bootstrap --check       exit 1 when cloudbuild.yaml is stale
  tpubuild bootstrap --output -     print it
"""

from __future__ import annotations

import argparse

from builder.commands.verb import Group, Verb, work


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--output", default="cloudbuild.yaml", metavar="PATH",
                   help="where to write it ('-' for stdout; default ./cloudbuild.yaml)")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 when the file differs from what would be written")


VERB = Verb.of(__doc__, "bootstrap", Group.ADMIN, 2, "write the root cloudbuild.yaml (the file users submit) for values.env's environment",
               arguments, work("builder.commands.bootstrap", "cmd_bootstrap"))
