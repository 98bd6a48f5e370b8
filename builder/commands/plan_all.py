"""``tpubuild plan --all``: every environment of the repository (builder/config/environments.py) in one
table: its values file, the action GitOps ``auto`` would take, and the hourly cost before → after.

Each row is ``tpubuild plan --action auto`` of that file (the same ``previous``, ``auto_plan`` and
``describe`` records, read here, not recomputed), so the table and each environment's own plan
tell the same story. Offline and without credentials it still works: the applied snapshot is then
unknown, and the row says so (action ``unknown``, cost before ``?``) while the cost after (what the
file asks for) is still shown. A row whose plan is refused (auto would move the environment, ...)
shows the refusal, and the command exits 2 after the table.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from builder.catalogue import cost
from builder.commands import warn
from builder.commands.compare import auto_plan, has_credentials, previous
from builder.config import environments
from builder.config.candidates import acting
from builder.config.gate import APPLIED, Door, refuse
from builder.facts.actions import Action, Verdict
from builder.facts.errors import BadInput, TpuBuildError
from builder.planning.describe import describe
from builder.planning.plan import make_plan

#: Flags that choose one environment's plan; --all plans auto of every environment.
_ONE_ENV_FLAGS: tuple[tuple[str, str], ...] = (("tpu", "--tpu"), ("mig", "--mig"), ("only", "--only"),
                                               ("applied", "--applied"), ("check", "--check"))


def _refuse_flags(args: argparse.Namespace) -> None:
    for attr, flag in _ONE_ENV_FLAGS:
        if getattr(args, attr, None):
            raise BadInput(f"{flag}: --all plans what auto would do in every environment, from each one's applied "
                           f"snapshot; drop {flag}, or plan one environment with --values FILE")
    if Action.parse(str(args.action)) not in (Action.CREATE, Action.AUTO):  # create: the default, which --all reads as auto
        raise BadInput(f"--action {args.action}: --all plans what auto would do in every environment; drop --action")


def _total(cost: dict[str, Any] | None) -> tuple[str | None, float | None]:
    """A cost record of ``describe`` (its ``before`` or ``after``) as (shown, known dollars/h)."""
    if cost is None:
        return None, None
    return cost["total"], cost["hourly_known"]


def _worst(figures: dict[str, Any]) -> dict[str, Any]:
    """The row's worst case (a candidate list: what the environment costs per hour if the slice
    lands in the dearest candidate, as its own plan says; builder/planning/candidate_table.py), or
    nothing with one candidate."""
    worst = (figures.get("candidates") or {}).get("worst")
    if worst is None:
        return {"cost_worst": None, "hourly_worst": None}
    most = "at most " if worst["bound"] in (None, "at most") else f"{worst['bound']} "
    return {"cost_worst": f"{most}{cost.money(worst['hourly'], worst['approximate'])}/h in {worst['zone']} {worst['mode']}",
            "hourly_worst": worst["hourly"]}


def row(env: Any) -> dict[str, Any]:
    """One environment's row: ``tpubuild plan --action auto`` of its file, as data."""
    s = env.settings
    out: dict[str, Any] = {"path": env.path, "env": s.env_name, "project_id": s.project_id, "protected": s.protected}
    try:
        refuse(s, Action.AUTO, Door.PLAN_ALL)  # what the environment's apply build refuses (builder/config/gate.py)
        prev = previous(s, None, need=False)
        # what the file asks for, whatever was applied: the cost after, and its worst case
        asked = describe(s, make_plan(s, Action.CREATE))["cost"]
        wanted, worst = asked["after"], _worst(asked)
        if not prev.known:
            why = prev.source if has_credentials() else (
                f"the applied snapshot is unknown: no Google credentials to read it from gs://{s.state_bucket} "
                "(gcloud auth application-default login)")
            return {**out, "action": "unknown", "modules": [], "why": why, "applied": "unknown",
                    "cost_before": None, "hourly_before": None, "cost_after": wanted["total"],
                    "hourly_after": wanted["hourly_known"], **worst}
        if prev.place is not None:  # auto keeps the slice where it was granted (builder/config/candidates.py)

            s = acting(s, prev.place, Action.AUTO)
        if prev.settings is not None:
            refuse(s, Action.AUTO, Door.PLAN_ALL, prev.settings, only=APPLIED)
        plan = auto_plan(s, prev)
        decision = prev.decision
        info = describe(s, plan, previous=prev) if plan is not None else None
        before, after = (info["cost"]["before"], info["cost"]["after"]) if info is not None else (wanted, wanted)
        worst = _worst(info["cost"]) if info is not None else worst
    except TpuBuildError as exc:
        return {**out, "action": "refused", "modules": [], "why": str(exc), "applied": "unknown", "cost_before": None,
                "hourly_before": None, "cost_after": None, "hourly_after": None, "cost_worst": None,
                "hourly_worst": None, "exit_code": exc.exit_code}
    (cost_before, hourly_before), (cost_after, hourly_after) = _total(before), _total(after)
    return {**out, "action": decision.action, "modules": sorted(decision.only or ()), "why": "; ".join(decision.reasons),
            "applied": "known" if prev.settings is not None else "none", "compared_with": prev.source,
            "cost_before": cost_before, "hourly_before": hourly_before, "cost_after": cost_after,
            "hourly_after": hourly_after, **worst}


def _action(r: dict[str, Any]) -> str:
    if r["action"] == Verdict.UPDATE:
        return f"update {', '.join(r['modules'])}"
    return "nothing to do" if r["action"] == Verdict.NOTHING else r["action"]


def _before(r: dict[str, Any]) -> str:
    if r["applied"] == "none":
        return "$0/h (nothing applied)"
    return r["cost_before"] or "?"


def as_text(rows: list[dict[str, Any]]) -> str:
    table = [("ENVIRONMENT", "NAME", "AUTO WOULD", "HOURLY COST (BEFORE -> AFTER)")]
    table += [(r["path"] + (" (protected)" if r["protected"] else ""), r["env"], _action(r),
               f"{_before(r)} -> {r['cost_after'] or '?'}" + (f" (worst case {r['cost_worst']})" if r["cost_worst"]
                                                              else "")) for r in rows]
    widths = [max(len(t[i]) for t in table) for i in range(3)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(t[:3], widths)) + "  " + t[3] for t in table]
    notes = [f"  {r['path']}: {r['why']}" for r in rows if r["action"] in ("unknown", "refused")]
    source = f"list prices from {cost.table()['source']['text']}"
    return "\n".join(lines + ["", source] + (["", "why:", *notes] if notes else [])) + "\n"


def run_plan_all(args: argparse.Namespace) -> int:
    _refuse_flags(args)
    repo, only = environments.repository_of(args.values)
    envs = environments.select(repo, only, args.values)
    for env in envs:
        for warning in env.settings.warnings:
            warn(warning)
    rows = [row(env) for env in envs]
    if args.format == "json":
        sys.stdout.write(json.dumps({"environments": rows, "prices": cost.table()["source"]}, indent=2) + "\n")
    else:
        sys.stdout.write(as_text(rows))
    refused = [r for r in rows if r["action"] == "refused"]
    for r in refused:
        print(f"tpubuild: error: {r['why']}", file=sys.stderr)
    return max((r["exit_code"] for r in refused), default=0)
