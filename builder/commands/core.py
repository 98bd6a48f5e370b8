"""``tpubuild validate``."""

from __future__ import annotations

import argparse

from builder.commands import load_settings


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("validate", parents=[common], help="check values.env and print a summary")
    p.set_defaults(func=run_validate)


def run_validate(args: argparse.Namespace) -> int:
    s = load_settings(args)
    t = s.topology
    print(f"{s.source}: ok: {s.env_name} in {s.project_id}/{s.zone}, {s.arch} architecture, "
          f"{s.accelerator_type} ({t.generation}, {t.chips} chips, {t.hosts} host{'s' if t.hosts != 1 else ''}), "
          + (f"{s.mig_shape.vms} x {s.mig_shape.machine_type}, topology {s.mig_shape.topology}, "
             f"{s.provisioning}" if s.arch == "mig" else f"runtime {s.runtime_version}"))
    return 0
