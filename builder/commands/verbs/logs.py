"""Show one host's training log, kept on Filestore.

examples:
  tpubuild logs                  host 0, last 200 lines
  tpubuild logs --host 3 -f
"""

from __future__ import annotations

import argparse

from builder.commands.parser import at_least
from builder.commands.verb import Group, Verb, work


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", type=int, default=0, metavar="N", help="host number, 0 .. hosts-1 (default 0)")
    p.add_argument("--follow", "-f", action="store_true", help="keep following the log")
    p.add_argument("--lines", "-n", type=at_least(1, " lines"), default=200, metavar="N",
                   help="lines of history to show, 1 or more (default 200)")
    p.add_argument("--model", default=None, help="model package (default: MODEL in values.env)")
    p.add_argument("--run", action="store_true", help="the log of 'tpubuild run' instead of the model's")
    p.add_argument("--dry-run", action="store_true", help="print the command instead of running it")
    p.add_argument("--metrics", action="store_true",
                   help="summarise torch_xla's metrics reports of every host (compiles, CPU fallbacks)")


VERB = Verb.of(__doc__, "logs", Group.USER, 8, "show a host's training log (on Filestore)",
               arguments, work("builder.commands.train", "run_logs"))
