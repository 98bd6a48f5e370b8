"""``tpubuild plan`` (what an action will do) and ``tpubuild render`` (the exact Cloud Build config).

Both work offline with no credentials and never import ``google.*``; ``plan`` does not even load
jinja2, except that ``plan`` on a calendar-mode file asks Compute Engine for calendar-mode advice when
credentials exist (builder/commands/advice.py) and says when it did not or could not. ``render --action initialize`` prints nothing on stdout and explains on stderr that
initialize runs no pipeline (exit 0): an empty build would be a build that silently does nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.catalogue.modules import accelerator_module
from builder.commands import load_settings
from builder.config.candidates import acting
from builder.config.gate import APPLIED, Door, refuse
from builder.facts.actions import Action
from builder.facts.errors import BadInput
from builder.inputs import build_limits
from builder.planning import request
from builder.planning.describe import INITIALIZE_NOTE, as_text, describe
from builder.render import pipeline, yamlout
from builder.render.mermaid import flowchart
from builder.render.plan_md import markdown

if TYPE_CHECKING:  # pragma: no cover
    from builder.commands.compare import Previous
    from builder.config import Settings
    from builder.planning.plan import Plan


def _plan(args: argparse.Namespace, *, compare: bool = False) -> tuple[Settings, Plan | None, Previous | None]:
    settings = load_settings(args)
    req = request.parse(settings, args.action, tpu=args.tpu, mig=args.mig, only=args.only,
                        allow_data_loss=args.allow_data_loss, allow_wipe=getattr(args, "allow_wipe", False),
                        door=Door.PLAN if compare else Door.RENDER)
    plan = request.plan_for(settings, req)  # None: auto, decided from the applied values (read here)
    # render compares only when it must (auto) or is told (--applied FILE): then it refuses what plan refuses
    read = compare or plan is None or getattr(args, "applied", None) is not None
    # a candidate list: an update or destroy acts where the snapshot says the slice was granted
    read = read or (len(settings.candidates) > 1 and req.action in (Action.UPDATE, Action.DESTROY))
    prev = None
    if read:  # builder/commands/compare.py: loaded only when there is something to compare with
        from builder.commands.compare import previous

        prev = previous(settings, args.applied, need=plan is None)
    if prev is not None and prev.place is not None:  # an update keeps the slice where it was granted

        settled = acting(settings, prev.place, req.action, prev.first_zone)
        if settled is not settings:
            settings = settled
            plan = request.plan_for(settings, req)
    if prev is not None and prev.settings is not None:  # before a slice is changed: the rows of the applied values (gate.APPLIED)
        refuse(settings, req.action, Door.PLAN if compare else Door.RENDER, prev.settings, only=APPLIED)
    if plan is None:
        from builder.commands.compare import auto_plan

        plan = auto_plan(settings, prev)
    return settings, plan, prev


def run_render(args: argparse.Namespace) -> int:
    settings, plan, prev = _plan(args)
    if plan is None:
        assert prev is not None and prev.decision is not None
        print(f"tpubuild: {prev.decision.summary()}; nothing to render", file=sys.stderr)
        return 0
    if not plan.operations:
        print(f"tpubuild: {INITIALIZE_NOTE}; nothing to render", file=sys.stderr)
        return 0
    if args.format == "mermaid":
        out = _picture(settings, plan, args)
    else:
        config = pipeline.render(settings, plan, allow_data_loss=args.allow_data_loss, allow_wipe=args.allow_wipe)
        out = yamlout.to_json(config) if args.format == "json" else yamlout.to_yaml(config)
        _write_scripts(config, getattr(args, "scripts", ""))  # first: a folder it cannot write prints no config
    sys.stdout.write(out)
    return 0


def _write_scripts(config: dict, folder: str) -> None:
    """The scripts ``config``'s steps run from the source (builder/inputs/build_limits.py): written
    under ``folder`` with ``--scripts``, else named on stderr (they are not in the config)."""
    shipped = build_limits.referenced(json.dumps(config))
    for path, data in shipped.items():
        if folder:
            target = Path(folder) / path
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            except OSError as exc:
                raise BadInput(f"--scripts {folder}: cannot write {path} ({exc.strerror or exc}); "
                               "name a folder you can write") from None
        else:
            print(f"tpubuild: render: {path} ships in the build's source (too long for one argument); "
                  "--scripts DIR writes it", file=sys.stderr)


def _picture(settings: Settings, plan: Plan, args: argparse.Namespace) -> str:
    """The Mermaid picture of the pipeline ``plan`` renders to (builder/render/mermaid.py)."""
    return flowchart(settings, plan, pipeline.render(settings, plan, allow_data_loss=args.allow_data_loss,
                                                     allow_wipe=getattr(args, "allow_wipe", False)))


def run_plan(args: argparse.Namespace) -> int:
    if getattr(args, "all", False):
        from builder.commands.plan_all import run_plan_all

        return run_plan_all(args)

    settings, plan, prev = _plan(args, compare=True)
    if plan is not None and plan.operations:
        pipeline.preflight(settings, plan)
    running = prev.settings if prev is not None else None
    outcomes = None
    if args.check and len(settings.candidates) > 1:  # every candidate's outcome goes into the plan's table
        from builder.commands.capacity import assess_all

        outcomes = assess_all(settings, running)
    info = describe(settings, plan, allow_data_loss=args.allow_data_loss, previous=prev, checked=outcomes)
    advice = None
    if settings.provisioning == "calendar" and plan is not None and plan.applies(accelerator_module(settings.arch)):
        from builder.commands import advice as calendar_advice  # asks Compute Engine when credentials exist
        from builder.commands.compare import has_credentials

        advice = info["calendar_advice"] = calendar_advice.for_plan(settings, has_credentials())
    stopped = None
    if prev is not None and prev.bucket:  # read from the state bucket: a build stopped half way, as status shows it
        from builder.commands.compare import stopped_build

        stopped = info["interrupted"] = stopped_build(settings)
    if args.format == "json":
        if args.check:  # one JSON document on stdout: a check that fails (no credentials, a refusal) is the only one
            _check(settings, running, outcomes)
        sys.stdout.write(json.dumps(info, indent=2) + "\n")
        return 0
    if args.format == "markdown":
        sys.stdout.write(markdown(info, _picture(settings, plan, args) if plan is not None and plan.operations else None))
    else:
        sys.stdout.write(as_text(info, bold=_bold_style()))
        if advice is not None:
            from builder.commands.advice import lines as advice_lines

            sys.stdout.write("\n" + "".join(f"{line}\n" for line in advice_lines(advice)))
        if stopped is not None:
            from builder.cloud.interrupted import lines

            sys.stdout.write("\nA build stopped half way (docs/safety.md, \"Kill it anywhere, run it again\"):\n"
                             + "".join(f"{line}\n" for line in lines(stopped)))
    if args.check:
        sys.stdout.flush()
        _check(settings, running, outcomes)
    return 0


def _check(settings: Settings, running: Settings | None, outcomes: list[Any] | None) -> None:
    """``plan --check``: the capacity check's lines (stderr) and verdict (``WorldError``: exit 1)."""
    from builder.commands.capacity import check, conclude, hosts_reach, regions_offer

    if outcomes is None:
        check(settings, running)
    else:
        hosts_reach(settings)
        regions_offer(settings)
        conclude(outcomes)


def _bold_style() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


