"""Remove the environment lock left by a build that is gone. Only with --force: make sure no build of
this environment is running (Cloud Build console, or `tpubuild status`).

examples:
  tpubuild status                 who holds the lock, and since when
  tpubuild unlock --force
"""

from __future__ import annotations

import argparse

from builder.commands.parser import add_flags
from builder.commands.verb import Group, Verb, work


def arguments(p: argparse.ArgumentParser) -> None:
    add_flags(p, {
        "--force": "required; refused while Cloud Build reports a build of this environment QUEUED or WORKING",
        "--even-if-running": "with --force: break the lock even while a build of this environment runs",
    })


VERB = Verb.of(__doc__, "unlock", Group.ADMIN, 4, "break the environment lock",
               arguments, work("builder.commands.state", "cmd_unlock"))
