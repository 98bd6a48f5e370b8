"""``tpubuild plan`` (what an action will do) and ``tpubuild render`` (the exact Cloud Build config).

Both work offline with no credentials and never import ``google.*``; ``plan`` does not even load
jinja2. ``render --action initialize`` prints nothing on stdout and explains on stderr that
initialize runs no pipeline (exit 0): an empty build would be a build that silently does nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from builder.commands import load_settings

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings
    from builder.plan import Plan

_INITIALIZE_NOTE = ("initialize runs no pipeline: it creates the state bucket, the dataset bucket and the "
                    "workspace in-process (tpubuild initialize), with no Terraform")

_VERB = {("create", "apply"): "create", ("update", "apply"): "create or change", ("destroy", "destroy"): "destroy"}


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    def scope(p: argparse.ArgumentParser) -> None:
        p.add_argument("--action", default="create", metavar="ACTION",
                       help="initialize, create, update or destroy (default: create)")
        p.add_argument("--tpu", action="store_true", help="scope update/destroy to the TPU (_TPU=true)")
        p.add_argument("--mig", action="store_true", help="scope update/destroy to the MIG, node only (_MIG=true)")
        p.add_argument("--only", metavar="MODULES", default=None,
                       help="update only these comma-separated modules, as GitOps auto does")
        p.add_argument("--allow-data-loss", action="store_true",
                       help="let the guards pass plans that destroy or replace Filestore or the shared PD "
                            "(_ALLOW_DATA_LOSS=true)")

    p = sub.add_parser("plan", parents=[common], help="show what an action will do, in what order")
    scope(p)
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    p.set_defaults(func=run_plan)

    r = sub.add_parser("render", parents=[common], help="print the Cloud Build config of an action")
    scope(r)
    r.add_argument("--allow-wipe", action="store_true",
                   help="let the seeder wipe a shared PD that already holds data (_ALLOW_WIPE=true)")
    r.add_argument("--format", choices=("yaml", "json"), default="yaml", help="output format (default: yaml)")
    r.set_defaults(func=run_render)


def _plan(args: argparse.Namespace) -> tuple[Settings, Plan]:
    from builder.plan import make_plan

    from builder.legacy import refuse_unbuildable

    settings = load_settings(args)
    refuse_unbuildable(settings, args.action)  # TPU Node is read-only legacy; see builder/legacy.py
    only = None
    if args.only is not None:
        only = frozenset(m.strip() for m in args.only.split(",") if m.strip())
    return settings, make_plan(settings, args.action, tpu=args.tpu, mig=args.mig, only=only)


def run_render(args: argparse.Namespace) -> int:
    from builder import pipeline

    settings, plan = _plan(args)
    if not plan.operations:
        print(f"tpubuild: {_INITIALIZE_NOTE}; nothing to render", file=sys.stderr)
        return 0
    config = pipeline.render(settings, plan, allow_data_loss=args.allow_data_loss, allow_wipe=args.allow_wipe)
    out = pipeline.to_json(config) if args.format == "json" else pipeline.to_yaml(config)
    sys.stdout.write(out)
    return 0


def run_plan(args: argparse.Namespace) -> int:
    from builder import pipeline

    settings, plan = _plan(args)
    if plan.operations:
        pipeline.preflight(settings, plan)
    info = describe(settings, plan, allow_data_loss=args.allow_data_loss)
    if args.format == "json":
        import json

        sys.stdout.write(json.dumps(info, indent=2) + "\n")
    else:
        sys.stdout.write(as_text(info, bold=_bold_style()))
    return 0


def _bold_style() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def _what(settings: Settings, module: str) -> str:
    s = settings
    if module == "filestore":
        return f"Filestore {s.filestore_name} ({s.shared_fs_tier}, {s.shared_fs_capacity_gb} GiB, share /{s.shared_fs_name})"
    if module == "shared_pd":
        use = "attached to every host" if s.shared_pd_attach else "not attached"
        return f"disk {s.shared_pd_name} ({s.shared_pd_type}, {s.shared_pd_size_gb} GB, {use})"
    if module == "tpu":
        kind = "TPU Node" if s.arch == "node" else "TPU VM"
        return f"{kind} {s.tpu_name} ({s.accelerator_type}, {s.runtime_version})"
    return f"MIG {s.mig_name} ({s.hosts} x {s.machine_type})"


def provisioning_meaning(s: Settings) -> str:
    """How the TPU is paid for and what that means (builder.config.offers.describe)."""
    from builder.config.offers import describe as describe_provisioning

    return describe_provisioning(s.provisioning, s.queued, s.queued_valid_for, s.reservation)


def describe(settings: Settings, plan: Plan, *, allow_data_loss: bool = False) -> dict[str, Any]:
    """The plan as data: the JSON of ``tpubuild plan --format json`` and the source of its text."""
    from builder import pipeline

    s, t = settings, settings.topology
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
        "operations": [{"module": o.module, "op": o.op, "after": list(o.after), "what": _what(s, o.module)}
                       for o in plan.operations],
        "stages": [[o.module for o in stage] for stage in plan.stages()],
        "created": [o.module for o in plan.operations if o.op == "apply" and plan.action == "create"],
        "changed": [o.module for o in plan.operations if o.op == "apply" and plan.action == "update"],
        "destroyed": [o.module for o in plan.operations if o.op == "destroy"],
        "allow_data_loss": allow_data_loss,
        "notes": [],
        "warnings": [],
    }
    notes: list[str] = info["notes"]
    warnings: list[str] = info["warnings"]
    if not plan.operations:
        notes.append(_INITIALIZE_NOTE + "; the buckets are kept by every later destroy")
        return info
    restore = pipeline.restore_snapshot(s, plan)
    if restore == "latest":
        notes.append(f"shared_pd: {s.shared_pd_name} is restored from the newest snapshot labelled "
                     f"tpubuild-env={s.env_name} (the build fails if there is none)")
    elif restore:
        notes.append(f"shared_pd: {s.shared_pd_name} is restored from snapshot {restore}")
    if pipeline.seeds(s, plan):
        notes.append(f"shared_pd: after it is applied, {s.gcs_dataset} is copied onto {s.shared_pd_name} "
                     "(shared_pd-seed), before any host attaches it")
    if pipeline.snapshots_before_destroy(plan):
        notes.append(f"shared_pd: a snapshot of {s.shared_pd_name} is taken before it is destroyed and named "
                     f"in the build log; SHARED_PD_RESTORE=latest restores it")
    if pipeline.backs_up_before_destroy(s, plan):
        notes.append(f"filestore: a backup of {s.filestore_name}:/{s.shared_fs_name} is taken before it is destroyed")
    if pipeline.loses_share_on_destroy(s, plan):
        warnings.append(f"filestore tier {s.shared_fs_tier} has no backups: destroying {s.filestore_name} "
                        f"deletes the data on the share /{s.shared_fs_name} for good; copy what you need first")
    if plan.action == "destroy":
        notes.append(f"the buckets are kept (gs://{s.state_bucket} holds the Terraform state and the workspace)")
    if plan.applies("tpu") and plan.action == "update":
        notes.append("tpu: if the change replaces the TPU (a new accelerator type or runtime), training is "
                     "interrupted; the guard announces it")
    if plan.action in ("create", "update"):
        if allow_data_loss:
            warnings.append("data loss is allowed: the guards let plans destroy or replace Filestore and the "
                            "shared PD (_ALLOW_DATA_LOSS=true)")
        else:
            notes.append("a guard checks every Terraform plan before its apply and refuses one that destroys or "
                         "replaces Filestore or the shared PD (override: _ALLOW_DATA_LOSS=true)")
    return info


def as_text(info: dict[str, Any], *, bold: bool) -> str:
    def strong(text: str) -> str:
        return f"\033[1m{text}\033[0m" if bold else f"**{text}**"

    hosts = info["hosts"]
    lines = [f"tpubuild plan: {info['action']} {info['env']} in {info['project_id']}/{info['zone']}"]
    arch = "node (TPU Node + MIG of worker VMs, XRT)" if info["arch"] == "node" else "vm (TPU VM pod, PJRT)"
    lines.append(f"  architecture: {arch}")
    lines.append(f"  accelerator:  {info['accelerator_type']} ({info['generation']}, {info['chips']} chips), "
                 f"runtime {info['runtime_version']}")
    if "provisioning_meaning" in info:
        lines.append(f"  provisioning: {info['provisioning_meaning']}")
    per_host = "one MIG worker VM per host" if info["arch"] == "node" else "each host is a TPU VM"
    lines.append(f"  hosts:        {hosts} ({per_host})")
    lines.append("")
    if not info["operations"]:
        lines.extend(f"  {n}" for n in info["notes"])
        return "\n".join(lines) + "\n"
    lines.append("Operations, in order:")
    ops = {o["module"]: o for o in info["operations"]}
    for n, stage in enumerate(info["stages"], 1):
        lines.append(f"  stage {n}{', in parallel' if len(stage) > 1 else ''}:")
        for module in stage:
            o = ops[module]
            after = f"  (after {', '.join(o['after'])})" if o["after"] else ""
            lines.append(f"    {o['op']:<7}  {module:<9}  {o['what']}{after}")
    lines.append("")
    for label, key in (("Created", "created"), ("Created or changed", "changed"), ("Destroyed", "destroyed")):
        if info[key]:
            lines.append(f"{label}: {', '.join(info[key])}")
    untouched = [m for m in ("filestore", "shared_pd", "tpu", "mig") if m not in ops
                 and not (m == "mig" and info["arch"] == "vm")]
    if untouched:
        lines.append(f"Untouched: {', '.join(untouched)}")
    if info["notes"] or info["warnings"]:
        lines.append("")
    lines.extend(strong(f"WARNING: {w}") for w in info["warnings"])
    lines.extend(f"note: {n}" for n in info["notes"])
    return "\n".join(lines) + "\n"
