"""Run your own command on every TPU host (or host N) with the host's XLA/PJRT environment, detached
(closing the terminal leaves it running), logged per host on Filestore at
<MOUNT_POINT>/nfs_share/logs/<env>/run/host-N.log. Hosts that are not ready are refused. Every word
of the command that names a file or folder under the current folder (and every --ship PATH) is
copied first to ~/.tpubuild/run on those hosts, at the same relative path, and the command runs
there; absolute paths are the hosts' own. `tpubuild stop` ends it and frees the TPU; `tpubuild logs
--run` shows its log.

examples:
  tpubuild run -- python3 models/examples/torch_xla_launch.py --steps 50   (the script is copied)
  tpubuild run --ship models/examples -- python3 models/examples/torch_xla_launch.py --batch 32
  tpubuild run --hosts 0 -- df -h /mnt/common     (any command)
  tpubuild run --dry-run -- python3 models/examples/torch_xla_launch.py --steps 10
"""

from __future__ import annotations

import argparse

from builder.commands.verb import Group, Verb, work


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--hosts", default="all", metavar="all|N", help="every host (default) or host N only")
    p.add_argument("--dry-run", action="store_true", help="print the commands instead of running them")
    p.add_argument("--ship", action="append", default=[], metavar="PATH",
                   help="also copy this file or folder (under the current folder) to the hosts; repeatable")
    p.add_argument("--no-ship", action="store_true",
                   help="copy nothing: the command's words that name local files are host paths")
    p.add_argument("--runtime", default="", metavar="MODEL",
                   help="launch SCRIPT [ARGS] on every host as MODEL's training does "
                        "(a model whose keys.py declares RUNTIME)")
    p.add_argument("words", nargs=argparse.REMAINDER, metavar="-- COMMAND...",
                   help="the command, after --, e.g. -- python3 train.py --steps 30")


VERB = Verb.of(__doc__, "run", Group.USER, 7, "run a command on the TPU hosts, detached, logged on Filestore",
               arguments, work("builder.commands.train", "run_run"))
