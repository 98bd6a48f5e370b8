"""Stop the training on every host and free the TPU (the environment stays up).

examples:
  tpubuild stop
  tpubuild stop --dry-run
  tpubuild stop --probe          is it training, and when it last wrote its checkpoint (stops nothing)
"""

from __future__ import annotations

import argparse

from builder.commands.verb import Group, Verb, work


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help="model package (default: MODEL in values.env)")
    p.add_argument("--dry-run", action="store_true", help="print the commands instead of running them")
    p.add_argument("--probe", action="store_true",
                   help="stop nothing: say whether the model trains and when it last wrote its checkpoint")


VERB = Verb.of(__doc__, "stop", Group.USER, 9, "stop the training on every host and free the TPU",
               arguments, work("builder.commands.train", "run_stop"))
