"""Rewrite a values.env onto the path Google recommends for its generation: a TPU Node file (v2/v3)
becomes its TPU VM equivalent (the runtime mapped to the generation's TPU VM runtime, node-only
keys commented out with the reason); a TPU VM file of a generation Compute Engine offers (v5p, v6e,
TPU7x) that does not say TPU_ARCH="vm" becomes TPU_ARCH="mig" (a file that says vm keeps it). Same
environment, project, zone, Filestore and disk settings and comments. Keeps a .bak (or writes
--output); prints a before/after summary; running it twice changes nothing.

examples:
  tpubuild migrate                          rewrite ./values.env (values.env.bak kept)
  tpubuild migrate --values old.env --output new.env
"""

from __future__ import annotations

import argparse

from builder.commands.verb import Group, Verb, work


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--output", metavar="FILE", default=None,
                   help="write the migrated file here instead of in place (no .bak then)")


VERB = Verb.of(__doc__, "migrate", Group.USER, 11, "rewrite a values.env onto the path Google recommends for its generation (keeps a .bak)",
               arguments, work("builder.commands.migrate", "run_migrate"))
