"""``tpubuild validate``."""

from __future__ import annotations

import argparse
import sys

from builder.commands import load_settings
from builder.errors import ConfigErrors

_EXAMPLES = """examples:
  tpubuild validate                         check ./values.env
  tpubuild validate --values examples/vm-v4-32.env --strict
  tpubuild validate --applied old.env       and what an update from those applied values refuses

Every problem is printed, one line each (file:line: KEY: what is wrong; how to fix it), and the
exit code is 2 when there is any. Unknown keys are warnings unless --strict makes them errors
(the default keeps seed-era files working)."""


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("validate", parents=[common], help="check values.env: every problem, one line each",
                       description="Check values.env and print a one-line summary of the environment, or "
                                   "every problem found (exit 2).",
                       epilog=_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--strict", action="store_true", help="unknown keys are errors, not warnings")
    p.add_argument("--applied", metavar="FILE", default=None,
                   help="the values.env last applied: also report what an update from it refuses (a change the "
                        "model's training cannot resume across), as plan and submit do")
    p.set_defaults(func=run_validate)


def run_validate(args: argparse.Namespace) -> int:
    try:
        s = load_settings(args, strict=args.strict, later=True)  # and what plan/render/submit/train refuse
        if args.applied is not None:
            from builder.commands.compare import previous
            from builder.config.later import refuse_changes

            refuse_changes(previous(s, args.applied, need=False).settings, s)
    except ConfigErrors as exc:
        for warning in exc.warnings:
            print(f"tpubuild: warning: {warning}", file=sys.stderr)
        for error in exc.errors:
            print(f"tpubuild: error: {' '.join(str(error).split())}", file=sys.stderr)
        if len(exc.errors) > 1:
            print(f"tpubuild: {len(exc.errors)} problems in {exc.path}", file=sys.stderr)
        return 2
    from builder.config.readiness import train_warnings

    for warning in train_warnings(s):
        print(f"tpubuild: warning: {warning}", file=sys.stderr)
    from builder import generations
    from builder import modules as catalogue

    t = s.topology
    path = generations.api(s.arch)
    hosts = catalogue.spec(s.arch, catalogue.hosts_module(s.arch))
    assert hosts is not None and hosts.summary is not None, s.arch
    print(f"{s.source}: ok: {s.env_name} in {s.project_id}/{s.zone}, {s.arch} architecture "
          f"({path.api}: {path.in_short if path.status == 'recommended' else path.status + ' at Google'}), "
          f"{s.accelerator_type} ({t.generation}, {t.chips} chips, {t.hosts} host{'s' if t.hosts != 1 else ''}), "
          + hosts.summary(s)
          + (f"; {len(s.candidates)} candidates, zone by zone, mode by mode: "
             f"{', '.join(c.label for c in s.candidates)}" if len(s.candidates) > 1 else ""))
    return 0
