"""``tpubuild plan`` (what an action will do) and ``tpubuild render`` (the exact Cloud Build config).

Both work offline with no credentials and never import ``google.*``; ``plan`` does not even load
jinja2. ``render --action initialize`` prints nothing on stdout and explains on stderr that
initialize runs no pipeline (exit 0): an empty build would be a build that silently does nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from builder.commands import load_settings

if TYPE_CHECKING:  # pragma: no cover
    from builder.commands.compare import Previous
    from builder.config import Settings
    from builder.plan import Plan


_PLAN_EXAMPLES = """examples:
  tpubuild plan                                  what create does, with its hourly cost
  tpubuild plan --action update --tpu            what update --tpu changes against the applied snapshot
  tpubuild plan --action auto --applied old.env  what GitOps auto would do, offline
  tpubuild plan --format json | jq .before_after
  tpubuild plan --all                            every environment of the repository: auto's action, cost

The comparison (before -> after) uses --applied FILE (a values.env as last applied), else the
applied snapshot read from the state bucket when Google credentials exist (read-only, no lock),
else none (every module is shown as created)."""

_RENDER_EXAMPLES = """examples:
  tpubuild render --action create > pipeline.yaml
  tpubuild render --action update --tpu --format json
  tpubuild render --action auto --applied old.env  the pipeline auto would submit (nothing: exit 0)"""


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    from builder.commands.parser import MODULE_NAMES, add_action, add_scope
    from builder.modules import Action

    def scope(p: argparse.ArgumentParser) -> None:
        add_action(p, default=Action.CREATE)
        add_scope(p)
        p.add_argument("--only", metavar="MODULES", default=None,
                       help=f"update only these comma-separated modules, as GitOps auto does: "
                            f"{', '.join(MODULE_NAMES)}")
        p.add_argument("--applied", metavar="FILE", default=None,
                       help="compare with this values.env as last applied ('none': compare with nothing); "
                            "default: the applied snapshot in the state bucket when credentials exist")

    p = sub.add_parser("plan", parents=[common], help="show what an action will change, in what order, and its cost",
                       description="Show what an action will do: every module before -> after, which hosts are "
                                   "recreated, the order of the steps, and the environment's hourly cost.",
                       epilog=_PLAN_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    scope(p)
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    p.add_argument("--check", action="store_true",
                   help="also run the pipeline's capacity check (the TPU quota, read from Cloud Quotas): exit 1 "
                        "when it cannot hold the slice")
    p.add_argument("--all", action="store_true",
                   help="every environment of the repository (values.env and environments/*/values.env) in one "
                        "table: the action auto would take and the hourly cost before -> after")
    p.set_defaults(func=run_plan)

    r = sub.add_parser("render", parents=[common], help="print the Cloud Build config of an action",
                       description="Print the exact Cloud Build config an action submits (offline, no credentials).",
                       epilog=_RENDER_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    scope(r)
    r.add_argument("--allow-wipe", action="store_true",
                   help="let the seeder wipe a shared PD that already holds data (_ALLOW_WIPE=true)")
    r.add_argument("--format", choices=("yaml", "json"), default="yaml", help="output format (default: yaml)")
    r.set_defaults(func=run_render)


def _plan(args: argparse.Namespace, *, compare: bool = False) -> tuple[Settings, Plan | None, Previous | None]:
    from builder import request
    from builder.config.later import refuse_changes
    from builder.legacy import APPLYING

    settings = load_settings(args)
    req = request.parse(settings, args.action, tpu=args.tpu, mig=args.mig, only=args.only,
                        allow_data_loss=args.allow_data_loss, allow_wipe=getattr(args, "allow_wipe", False))
    plan = request.plan_for(settings, req)  # None: auto, decided from the applied values (read here)
    # render compares only when it must (auto) or is told (--applied FILE): then it refuses what plan refuses
    read = compare or plan is None or getattr(args, "applied", None) is not None
    # a candidate list: an update or destroy acts where the snapshot says the slice was granted
    read = read or (len(settings.candidates) > 1 and req.action in ("update", "destroy"))
    prev = None
    if read:  # builder/commands/compare.py: loaded only when there is something to compare with
        from builder.commands.compare import previous

        prev = previous(settings, args.applied, need=plan is None)
    if prev is not None and prev.granted is not None:  # an update keeps the slice where it was granted
        from builder.config.candidates import acting

        settled = acting(settings, prev.granted, req.action)
        if settled is not settings:
            settings = settled
            plan = request.plan_for(settings, req)
    if prev is not None and req.action in APPLYING:  # before a slice is changed: builder/config/later.py
        refuse_changes(prev.settings, settings)
    if plan is None:
        from builder.commands.compare import auto_plan

        plan = auto_plan(settings, prev)
    return settings, plan, prev


def run_render(args: argparse.Namespace) -> int:
    from builder import pipeline, yamlout

    settings, plan, prev = _plan(args)
    if plan is None:
        assert prev is not None and prev.decision is not None
        print(f"tpubuild: {prev.decision.summary()}; nothing to render", file=sys.stderr)
        return 0
    if not plan.operations:
        from builder.describe import INITIALIZE_NOTE

        print(f"tpubuild: {INITIALIZE_NOTE}; nothing to render", file=sys.stderr)
        return 0
    config = pipeline.render(settings, plan, allow_data_loss=args.allow_data_loss, allow_wipe=args.allow_wipe)
    out = yamlout.to_json(config) if args.format == "json" else yamlout.to_yaml(config)
    sys.stdout.write(out)
    return 0


def run_plan(args: argparse.Namespace) -> int:
    if getattr(args, "all", False):
        from builder.commands.plan_all import run_plan_all

        return run_plan_all(args)
    from builder import pipeline
    from builder.describe import as_text, describe

    settings, plan, prev = _plan(args, compare=True)
    if plan is not None and plan.operations:
        pipeline.preflight(settings, plan)
    running = prev.settings if prev is not None else None
    outcomes = None
    if args.check and len(settings.candidates) > 1:  # every candidate's outcome goes into the plan's table
        from builder.commands.capacity import assess_all

        outcomes = assess_all(settings, running)
    info = describe(settings, plan, allow_data_loss=args.allow_data_loss, previous=prev, checked=outcomes)
    stopped = None
    if prev is not None and prev.bucket:  # read from the state bucket: a build stopped half way, as status shows it
        from builder.commands.compare import stopped_build

        stopped = info["interrupted"] = stopped_build(settings)
    if args.format == "json":
        import json

        sys.stdout.write(json.dumps(info, indent=2) + "\n")
    else:
        sys.stdout.write(as_text(info, bold=_bold_style()))
        if stopped is not None:
            from builder.cloud.interrupted import lines

            sys.stdout.write("\nA build stopped half way (docs/safety.md, \"Kill it anywhere, run it again\"):\n"
                             + "".join(f"{line}\n" for line in lines(stopped)))
    if args.check:
        from builder.commands.capacity import check, conclude

        sys.stdout.flush()
        if outcomes is None:
            check(settings, running)
        else:
            conclude(outcomes)
    return 0


def _bold_style() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


