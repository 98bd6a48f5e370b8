"""``tpubuild validate``."""

from __future__ import annotations

import argparse
import sys

from builder.catalogue import modules as catalogue
from builder.commands import load_settings
from builder.config.gate import APPLIED, Door, refuse
from builder.config.readiness import train_warnings
from builder.facts import generations
from builder.facts.errors import ConfigErrors

def run_validate(args: argparse.Namespace) -> int:
    try:
        s = load_settings(args, strict=args.strict, later=True)  # and what plan/render/submit/train refuse
        if args.applied is not None:
            from builder.commands.compare import previous

            refuse(s, None, Door.VALIDATE, previous(s, args.applied, need=False).settings, only=APPLIED)
    except ConfigErrors as exc:
        for warning in exc.warnings:
            print(f"tpubuild: warning: {warning}", file=sys.stderr)
        for error in exc.errors:
            print(f"tpubuild: error: {' '.join(str(error).split())}", file=sys.stderr)
        if len(exc.errors) > 1:
            print(f"tpubuild: {len(exc.errors)} problems in {exc.path}", file=sys.stderr)
        return 2

    for warning in train_warnings(s):
        print(f"tpubuild: warning: {warning}", file=sys.stderr)

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
