"""``tpubuild plan`` (what an action will do) and ``tpubuild render`` (the exact Cloud Build config).

Both work offline with no credentials and never import ``google.*``; ``plan`` does not even load
jinja2. ``render --action initialize`` prints nothing on stdout and explains on stderr that
initialize runs no pipeline (exit 0): an empty build would be a build that silently does nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.commands import load_settings
from builder.errors import BadInput, TpuBuildError
from builder.modules import modules, spec

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings
    from builder.plan import Plan

_INITIALIZE_NOTE = ("initialize runs no pipeline: it creates the state bucket, the dataset bucket and the "
                    "workspace in-process (tpubuild initialize), with no Terraform")

_VERB = {("create", "apply"): "create", ("update", "apply"): "create or change", ("destroy", "destroy"): "destroy"}


_PLAN_EXAMPLES = """examples:
  tpubuild plan                                  what create does, with its hourly cost
  tpubuild plan --action update --tpu            what update --tpu changes against the applied snapshot
  tpubuild plan --action auto --applied old.env  what GitOps auto would do, offline
  tpubuild plan --format json | jq .before_after

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

    settings = load_settings(args)
    req = request.parse(settings, args.action, tpu=args.tpu, mig=args.mig, only=args.only,
                        allow_data_loss=args.allow_data_loss, allow_wipe=getattr(args, "allow_wipe", False))
    plan = request.plan_for(settings, req)  # None: auto, decided from the applied values (read here)
    prev = previous(settings, args.applied, need=plan is None) if compare or plan is None else None
    return settings, (auto_plan(settings, prev) if plan is None else plan), prev


@dataclass
class Previous:
    """What the plan is compared with: the applied values (None: nothing applied, or unknown)
    and, from the state bucket, the snapshot's record; ``decision`` is auto's, once made."""

    settings: Settings | None
    source: str
    build_id: str = ""
    outstanding: frozenset[str] = frozenset()
    absent: frozenset[str] = frozenset()
    sources: dict[str, str] | None = None
    known: bool = True  # False: there was nothing to compare with (no file, no credentials)
    decision: Any = None


def _has_credentials() -> bool:
    """Whether Google credentials are configured, without importing google.auth (plan stays fast)."""
    if os.environ.get("STORAGE_EMULATOR_HOST") or os.environ.get("GOOGLE_APPLICATION_CREDENTIALS"):
        return True
    config = os.environ.get("CLOUDSDK_CONFIG") or os.path.join(os.path.expanduser("~"), ".config", "gcloud")
    return os.path.isfile(os.path.join(config, "application_default_credentials.json"))


def previous(settings: Settings, applied: str | None, *, need: bool) -> Previous:
    """The applied values to compare with: ``--applied FILE``, ``--applied none``, else the state
    bucket's snapshot (read-only, no lock) when credentials exist. ``need`` (auto): no source is
    bad input; otherwise the plan goes on without a comparison."""
    from builder.applied import applied_settings, compared_with
    from builder.config import load
    from builder.files import MAX_BYTES, read_file

    if applied is not None and applied.strip().lower() == "none":
        if need:
            raise BadInput("--applied: auto needs the applied values to decide; pass --applied FILE "
                           "(an empty file means nothing was applied yet)")
        return Previous(None, "nothing (--applied none)", known=False)
    if applied is not None:
        path = Path(applied)
        try:
            if not read_file(path, MAX_BYTES, what="an applied values file", fix="pass the values.env last "
                             "applied to this environment, or --applied none if nothing was applied").strip():
                return Previous(None, f"{path} (empty: nothing applied yet)")
            old = load(path)
            return Previous(old, compared_with(old, settings, str(path), destroy_with=str(path)))
        except TpuBuildError as exc:
            raise BadInput(f"--applied: {exc}") from None
    if not _has_credentials():
        if need:
            raise BadInput("--applied: auto needs the applied snapshot; pass --applied FILE, or sign in "
                           "(gcloud auth application-default login) so it is read from the state bucket")
        return Previous(None, "nothing (no credentials to read the applied snapshot; pass --applied FILE)",
                        known=False)
    where = f"gs://{settings.state_bucket}"
    try:
        from builder.cloud import buckets, clients, snapshot

        client = clients.storage(settings.project_id)
        if not buckets.exists(client, settings.state_bucket):
            return Previous(None, f"{where} (no state bucket: nothing applied yet)")
        record = snapshot.read(client.bucket(settings.state_bucket), settings.env_name)
    except TpuBuildError as exc:
        if need:
            raise
        print(f"tpubuild: warning: could not read the applied snapshot ({exc}); no comparison", file=sys.stderr)
        return Previous(None, f"nothing (the applied snapshot could not be read)", known=False)
    if record is None:
        return Previous(None, f"{where}/{snapshot.values_path(settings.env_name)} (none: nothing applied yet)")
    shown = f"{where}/{snapshot.values_path(settings.env_name)} (build {record.build_id or '?'})"
    try:
        old = applied_settings(record.values, settings)
    except (TpuBuildError, UnicodeDecodeError) as exc:
        if need:
            raise BadInput(f"{shown} no longer parses ({exc}); pass --applied FILE") from None
        return Previous(None, f"{shown}: no longer parses", known=False)
    shown = compared_with(old, settings, shown, destroy_with="<its values.env>")
    return Previous(old, shown, record.build_id, record.outstanding, record.absent, record.sources or None)


def auto_plan(settings: Settings, prev: Previous) -> Plan | None:
    """What GitOps ``auto`` would run (``builder.cloud.auto.decide_now``, the same decision
    ``submit`` makes); None: nothing to do. The decision is kept in ``prev.decision``."""
    from builder import auto
    from builder.cloud.auto import decide_now

    prev.decision = decide_now(settings, prev.settings, build_id=prev.build_id, outstanding=prev.outstanding,
                               absent=prev.absent, sources_then=prev.sources)
    return auto.plan_for(settings, prev.decision)


def run_render(args: argparse.Namespace) -> int:
    from builder import pipeline

    settings, plan, prev = _plan(args)
    if plan is None:
        assert prev is not None and prev.decision is not None
        print(f"tpubuild: {prev.decision.summary()}; nothing to render", file=sys.stderr)
        return 0
    if not plan.operations:
        print(f"tpubuild: {_INITIALIZE_NOTE}; nothing to render", file=sys.stderr)
        return 0
    config = pipeline.render(settings, plan, allow_data_loss=args.allow_data_loss, allow_wipe=args.allow_wipe)
    out = pipeline.to_json(config) if args.format == "json" else pipeline.to_yaml(config)
    sys.stdout.write(out)
    return 0


def run_plan(args: argparse.Namespace) -> int:
    from builder import pipeline

    settings, plan, prev = _plan(args, compare=True)
    if plan is not None and plan.operations:
        pipeline.preflight(settings, plan)
    info = describe(settings, plan, allow_data_loss=args.allow_data_loss, previous=prev)
    if args.format == "json":
        import json

        sys.stdout.write(json.dumps(info, indent=2) + "\n")
    else:
        sys.stdout.write(as_text(info, bold=_bold_style()))
    return 0


def _bold_style() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def _what(settings: Settings, module: str) -> str:
    found = spec(settings.arch, module)
    assert found is not None, module  # the plan holds only modules of this architecture
    return found.what(settings)


def provisioning_meaning(s: Settings) -> str:
    """How the TPU is paid for and what that means (builder.config.offers.describe)."""
    from builder.config.offers import describe as describe_provisioning

    return describe_provisioning(s.provisioning, s.queued, s.queued_valid_for, s.reservation)


#: Which prices.json source page a cost item's module is priced from.
_SOURCE_OF = {"tpu": "tpu", "mig": "compute", "filestore": "filestore", "shared_pd": "disk"}


def _comparison(settings: Settings, plan: Plan, prev: Previous | None) -> dict[str, Any]:
    """The before → after and the cost sections of ``describe``."""
    from builder import cost, diff

    applied = prev.settings if prev is not None else None
    absent = prev.absent if prev is not None else frozenset()
    d = diff.compare(applied, settings, plan, absent=absent)
    every = modules(settings.arch)
    if applied is not None and applied.arch == settings.arch:
        existed = frozenset(m for m in every if m not in absent)
        before = cost.estimate(applied, existed)
    else:
        existed, before = frozenset(), None
    applied_now = frozenset(o.module for o in plan.operations if o.op == "apply")
    destroyed = frozenset(o.module for o in plan.operations if o.op == "destroy")
    kept = existed - applied_now - destroyed
    after_items = cost.estimate(settings, applied_now).items
    if applied is not None and kept:
        after_items = cost.estimate(applied, kept).items + after_items
    after = cost.Estimate(tuple(sorted(after_items, key=lambda i: every.index(i.module))))
    table = cost.table()
    return {
        "before_after": {"compared_with": prev.source if prev is not None else "nothing", **d.as_dict(),
                         "lines": diff.lines(d)},
        "cost": {"before": before.as_dict() if before is not None else None, "after": after.as_dict(),
                 "change": cost.change_text(before, after),
                 "prices": {"file": "builder/data/prices.json", "retrieved": table["retrieved"],
                            "checked": table.get("verification", {}).get("checked", "never"),
                            "check_at": sorted({table["sources"][k] for k in _SOURCE_OF
                                                if k in {i.module for i in after.unconfirmed}
                                                for k in [_SOURCE_OF[k]]}),
                            "currency": table["currency"], "sources": table["sources"]}},
    }


def describe(settings: Settings, plan: Plan | None, *, allow_data_loss: bool = False,
             previous: Previous | None = None) -> dict[str, Any]:
    """The plan as data: the JSON of ``tpubuild plan --format json`` and the source of its text.

    ``plan`` is None when ``auto`` has nothing to do (``previous.decision`` says why)."""
    from builder import plan as plans
    from builder.pipeline import queue_wait_s

    s, t = settings, settings.topology
    decision = previous.decision if previous is not None else None
    auto_info = None
    if decision is not None:
        auto_info = {"decision": decision.action, "summary": decision.summary(),
                     "modules": sorted(decision.only) if decision.only else [], "reasons": list(decision.reasons),
                     "compared_with": previous.source if previous is not None else ""}
    if plan is None:
        return {"action": "auto", "env": s.env_name, "project_id": s.project_id, "zone": s.zone, "arch": s.arch,
                "accelerator_type": s.accelerator_type, "hosts": s.hosts, "auto": auto_info,
                "nothing_to_do": True, "operations": [], "notes": [], "warnings": []}
    info: dict[str, Any] = {
        "action": plan.action,
        "arch": s.arch,
        "accelerator_type": s.accelerator_type,
        "hosts": s.hosts,
        "env": s.env_name,
        "project_id": s.project_id,
        "zone": s.zone,
        "generation": t.generation,
        "chips": t.chips,
        "runtime_version": s.runtime_version,
        "provisioning": s.provisioning,
        "queued": s.queued,
        "provisioning_meaning": provisioning_meaning(s),
        **({"slice": {"machine_type": s.mig_shape.machine_type, "vms": s.mig_shape.vms,
                      "topology": s.mig_shape.topology, "provisioning": s.provisioning,
                      "reservation": s.reservation}} if s.arch == "mig" else {}),
        "operations": [{"module": o.module, "op": o.op, "after": list(o.after), "what": _what(s, o.module)}
                       for o in plan.operations],
        "stages": [[o.module for o in stage] for stage in plan.stages()],
        "steps": [{"id": st.id, "kind": st.kind, "module": st.module, "after": list(st.after)} for st in plan.steps],
        "created": [o.module for o in plan.operations if o.op == "apply" and plan.action == "create"],
        "changed": [o.module for o in plan.operations if o.op == "apply" and plan.action == "update"],
        "destroyed": [o.module for o in plan.operations if o.op == "destroy"],
        "allow_data_loss": allow_data_loss,
        "notes": [],
        "warnings": [],
    }
    if auto_info is not None:
        info["auto"] = auto_info
    if plan.operations:
        info.update(_comparison(s, plan, previous))
        info["nothing_to_do"] = info["before_after"]["nothing_to_do"]
    notes: list[str] = info["notes"]
    warnings: list[str] = info["warnings"]
    if not plan.operations:
        notes.append(_INITIALIZE_NOTE + "; the buckets are kept by every later destroy")
        return info
    restore = plans.restore_snapshot(s, plan)
    if restore == "latest":
        notes.append(f"shared_pd: {s.shared_pd_name} is restored from the newest snapshot labelled "
                     f"tpubuild-env={s.env_name} (the build fails if there is none)")
    elif restore:
        notes.append(f"shared_pd: {s.shared_pd_name} is restored from snapshot {restore}")
    if plans.seeds(s, plan):
        notes.append(f"shared_pd: after it is applied, {s.gcs_dataset} is copied onto {s.shared_pd_name} "
                     "(shared_pd-seed), before any host attaches it")
    if plans.snapshots_before_destroy(plan):
        notes.append(f"shared_pd: a snapshot of {s.shared_pd_name} is taken before it is destroyed and named "
                     f"in the build log; SHARED_PD_RESTORE=latest restores it")
    if plans.backs_up_before_destroy(s, plan):
        notes.append(f"filestore: a backup of {s.filestore_name}:/{s.shared_fs_name} is taken before it is destroyed")
    if plans.loses_share_on_destroy(s, plan):
        warnings.append(f"filestore tier {s.shared_fs_tier} has no backups: destroying {s.filestore_name} "
                        f"deletes the data on the share /{s.shared_fs_name} for good; copy what you need first")
    if plan.action == "destroy":
        notes.append(f"the buckets are kept (gs://{s.state_bucket} holds the Terraform state and the workspace)")
    if plan.applies("tpu") and plan.action == "update":
        notes.append("tpu: if the change replaces the TPU (a new accelerator type or runtime), training is "
                     "interrupted; the guard announces it")
    if plans.queues(s) and plan.applies("tpu"):
        wait = queue_wait_s(s)
        limit = f"up to TPU_QUEUED_VALID_FOR={s.queued_valid_for}" if s.queued_valid_for else "until capacity is free"
        notes.append(f"tpu: queued: after tpu-apply (the hosts' identity and firewall), tpu-queue requests {s.tpu_name} "
                     f"with `gcloud compute tpus queued-resources create`; it may wait {limit}, and the build waits "
                     f"for it to become ACTIVE for at most {wait // 3600}h{wait % 3600 // 60:02d}m (then the build fails "
                     "and the request stays queued: run update to wait again)")
        if plan.action == "update":
            notes.append(f"tpu: queued: if the accelerator type or runtime changed, queued resource {s.tpu_name} is "
                         "replaced: training interrupted; the new slice waits in the queue")
    if plans.queues(s) and plan.destroys("tpu"):
        notes.append(f"tpu: queued resource {s.tpu_name} (and its TPU VM) is deleted by tpu-unqueue before the "
                     "tpu module's Terraform destroy")
    if s.env_ttl_hours and s.arch != "node":
        from builder import ttl

        info["ttl"] = ttl.plan_info(s, applies_tpu=plan.applies("mig" if s.arch == "mig" else "tpu")
                                     and plan.action != "destroy")
        notes.append(f"ttl: {info['ttl']['text']}")
    if plan.action in ("create", "update"):
        if allow_data_loss:
            warnings.append("data loss is allowed: the guards let plans destroy or replace Filestore and the "
                            "shared PD (_ALLOW_DATA_LOSS=true)")
        else:
            notes.append("a guard checks every Terraform plan before its apply and refuses one that destroys or "
                         "replaces Filestore or the shared PD (override: _ALLOW_DATA_LOSS=true)")
    return info


def step_lines(steps: list[dict[str, Any]]) -> list[str]:
    """The pipeline's steps, one line per module (``mig: plan → guard → drain → apply → resize``;
    each step's id is ``<module>-<kind>``) and one per build-wide step, in the build's order."""
    out: list[str] = []
    current = None
    for st in steps:
        if st["module"] and st["module"] == current:
            out[-1] += f" → {st['kind']}"
        elif st["module"]:
            out.append(f"{st['module']}: {st['kind']}")
        else:
            out.append(st["id"])
        current = st["module"]
    return out


def as_text(info: dict[str, Any], *, bold: bool) -> str:
    def strong(text: str) -> str:
        return f"\033[1m{text}\033[0m" if bold else f"**{text}**"

    hosts = info["hosts"]
    auto_info = info.get("auto")
    if auto_info is not None and auto_info["decision"] == "none":
        lines = [f"tpubuild plan: auto {info['env']} in {info['project_id']}/{info['zone']}",
                 f"  compared with: {auto_info['compared_with']}", "",
                 "auto: nothing to do"]
        lines.extend(f"  - {r}" for r in auto_info["reasons"])
        return "\n".join(lines) + "\n"
    lines = [f"tpubuild plan: {info['action']} {info['env']} in {info['project_id']}/{info['zone']}"]
    if auto_info is not None:
        lines[0] = f"tpubuild plan: auto → {info['action']} {info['env']} in {info['project_id']}/{info['zone']}"
    arch = {"node": "node (TPU Node + MIG of worker VMs, XRT)", "vm": "vm (TPU VM pod, PJRT)",
            "mig": "mig (Compute Engine MIG of TPU VMs with a workload policy, PJRT)"}[info["arch"]]
    lines.append(f"  architecture: {arch}")
    if "slice" in info:
        sl = info["slice"]
        lines.append(f"  accelerator:  {info['accelerator_type']} ({info['generation']}, {info['chips']} chips), "
                     f"topology {sl['topology']}")
        lines.append(f"  slice:        {sl['vms']} x {sl['machine_type']}, {sl['provisioning']}"
                     + (f" (reservation {sl['reservation']})" if sl["reservation"] else ""))
    else:
        lines.append(f"  accelerator:  {info['accelerator_type']} ({info['generation']}, {info['chips']} chips), "
                     f"runtime {info['runtime_version']}")
    if "provisioning_meaning" in info:
        lines.append(f"  provisioning: {info['provisioning_meaning']}")
    per_host = {"node": "one MIG worker VM per host", "vm": "each host is a TPU VM",
                "mig": "each host is a TPU VM of the MIG"}[info["arch"]]
    lines.append(f"  hosts:        {hosts} ({per_host})")
    lines.append("")
    if not info["operations"]:
        lines.extend(f"  {n}" for n in info["notes"])
        return "\n".join(lines) + "\n"
    if auto_info is not None:
        lines.append(auto_info["summary"])
        lines.extend(f"  - {r}" for r in auto_info["reasons"])
        lines.append("")
    ba = info["before_after"]
    lines.append(f"Before → after (compared with {ba['compared_with']}):")
    lines.extend(f"  {line}" for line in ba["lines"])
    lines.append("")
    c = info["cost"]
    caveat = " (estimate from unconfirmed list prices)" if c["after"]["unconfirmed"] else ""
    lines.append(f"Cost per hour: {c['change']}{caveat}")
    for item in c["after"]["items"]:
        if item["hourly"] is None:
            lines.append(f"  {item['what']}: price unknown ({item['unknown_why']})")
        else:
            lines.append(f"  {item['what']}: {'~' if item['approximate'] else ''}${item['hourly']:,.2f}/h"
                         f"{'' if item['confirmed'] else ' (unconfirmed)'}")
    approx = " (~: the list price of another region)" if c["after"]["approximate"] else ""
    lines.append(f"  list prices in {c['prices']['currency']} from {c['prices']['file']}, retrieved "
                 f"{c['prices']['retrieved']}{approx}; your bill may differ")
    if c["after"]["unconfirmed"]:
        lines.append(f"  (unconfirmed): not found in Google's price pages when last checked "
                     f"({c['prices']['checked']}); check {', '.join(c['prices']['check_at'])} before relying on it")
    lines.append("")
    lines.append("Operations, in order:")
    ops = {o["module"]: o for o in info["operations"]}
    for n, stage in enumerate(info["stages"], 1):
        lines.append(f"  stage {n}{', in parallel' if len(stage) > 1 else ''}:")
        for module in stage:
            o = ops[module]
            after = f"  (after {', '.join(o['after'])})" if o["after"] else ""
            lines.append(f"    {o['op']:<7}  {module:<9}  {o['what']}{after}")
    lines.append("")
    lines.append("Pipeline steps, as `tpubuild render` lists them:")
    lines.extend(f"  {line}" for line in step_lines(info["steps"]))
    lines.append("")
    for label, key in (("Created", "created"), ("Created or changed", "changed"), ("Destroyed", "destroyed")):
        if info[key]:
            lines.append(f"{label}: {', '.join(info[key])}")
    untouched = [m for m in modules(info["arch"]) if m not in ops]
    if untouched:
        lines.append(f"Untouched: {', '.join(untouched)}")
    if info["notes"] or info["warnings"]:
        lines.append("")
    lines.extend(strong(f"WARNING: {w}") for w in info["warnings"])
    lines.extend(f"note: {n}" for n in info["notes"])
    return "\n".join(lines) + "\n"
