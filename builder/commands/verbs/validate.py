"""Check values.env and print a one-line summary of the environment, or every problem found (exit 2).

examples:
  tpubuild validate                         check ./values.env
  tpubuild validate --values examples/vm-v4-32.env --strict
  tpubuild validate --applied old.env       and what an update from those applied values refuses

Every problem is printed, one line each (file:line: KEY: what is wrong; how to fix it), and the
exit code is 2 when there is any. Unknown keys are warnings unless --strict makes them errors
(the default keeps seed-era files working).
"""

from __future__ import annotations

import argparse

from builder.commands.verb import Group, Verb, work


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--strict", action="store_true", help="unknown keys are errors, not warnings")
    p.add_argument("--applied", metavar="FILE", default=None,
                   help="the values.env last applied: also report what an update from it refuses (a change the "
                        "model's training cannot resume across), as plan and submit do")


VERB = Verb.of(__doc__, "validate", Group.USER, 1, "check values.env: every problem, one line each",
               arguments, work("builder.commands.core", "run_validate"))
