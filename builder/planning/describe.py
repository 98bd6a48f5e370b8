"""What ``tpubuild plan`` says: the plan as data (``describe``, the JSON of ``plan --format json``)
and as text (``as_text``).

Pure: it reads the plan (``builder.planning.plan``), the before → after (``builder.planning.diff``) and the cost
(``builder.catalogue.cost``) and adds nothing of its own; ``builder.commands.pipeline_cmds`` parses the
command line and calls it. ``previous`` is what the plan is compared with (the command's
``Previous``: ``settings``, ``source``, ``absent``, ``decision``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from builder.catalogue import cost
from builder.catalogue.modules import NAMES, accelerator_module, modules, spec
from builder.catalogue.step_kinds import queue_wait_s
from builder.config.candidates import stays
from builder.config.model_registry import change_notes
from builder.config.offers import describe as describe_provisioning
from builder.facts import generations
from builder.facts.actions import APPLIES, Action, Verdict
from builder.inputs import recovery, ttl
from builder.planning import candidate_table, diff, money, plan as plans, move, replacement
from builder.planning.plan import not_wanted

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings
    from builder.planning.plan import Plan



class Previous(Protocol):
    """What a plan is compared with (``builder.commands.compare.Previous`` is one): the
    applied values (None: nothing applied, or unknown), where they come from, the modules the
    snapshot records as absent, and auto's decision once made."""

    settings: Settings | None
    source: str
    absent: frozenset[str]
    decision: Any


INITIALIZE_NOTE = ("initialize runs no pipeline: it creates the state bucket, the dataset bucket and the "
                   "workspace in-process (tpubuild initialize), with no Terraform")


def _what(settings: Settings, module: str, op: str) -> str:
    """An operation's line: what the module is and, for an apply, what it does to a change (its
    catalogue entry's ``how``; a destroy's line says only what goes)."""
    found = spec(settings.arch, module)
    assert found is not None, module  # the plan holds only modules of this architecture
    how = found.how(settings) if found.how is not None and op == "apply" else ""
    return found.what(settings) + (f"; {how}" if how else "")


def subject(settings: Settings, plan: Plan, previous: Previous | None) -> Settings:
    """Whose values the plan's header and operation lines describe: the values file's, but on a
    destroy compared with applied values of the same environment (project, name, architecture)
    those: a destroy takes what is applied (its Terraform states), not what the file would make.
    The notes that tell the steps stay the file's, as the pipeline is rendered from it."""
    applied = previous.settings if previous is not None else None
    if (plan.action is Action.DESTROY and applied is not None and applied.arch == settings.arch
            and (applied.project_id, applied.env_name) == (settings.project_id, settings.env_name)):
        return applied
    return settings


def provisioning_meaning(s: Settings) -> str:
    """How the TPU is paid for and what that means (builder.config.offers.describe)."""
    return describe_provisioning(s.provisioning, s.queued, s.queued_valid_for, s.reservation,
                                 max_run_hours=s.max_run_hours, calendar_start=s.calendar_start,
                                 calendar_days=s.calendar_days, calendar_written=s.raw.get("TPU_CALENDAR_START", ""))


def path_info(s: Settings) -> dict[str, Any]:
    """Which API the file's path (TPU_ARCH) uses, what Google says of it and, where Google does not
    recommend it, the warning (builder/facts/generations.py ``path_story``, from the data file's ``apis``)."""
    found = generations.api(s.arch)
    line, warning = generations.path_story(s.arch, s.topology.generation)
    return {"arch": s.arch, "api": found.api, "status": found.status, "text": line, "warning": warning,
            "source": found.source, "checked": found.checked}


def _unchanged_applies(info: dict[str, Any]) -> None:
    """Compared with an applied snapshot, a module whose apply runs but whose values do not change
    (before → after: untouched) is neither created nor changed: it moves from ``created``/``changed``
    to ``unchanged``, so the summary tells the before → after's story. With nothing to compare
    with, every apply may create or change its module, and the lists stay as the operations say."""
    ba = info["before_after"]
    if not ba["applied"]:
        return
    same = [m["module"] for m in ba["modules"] if m["status"] == "unchanged"]
    for key in ("created", "changed"):
        info[key] = [m for m in info[key] if m not in same]
    info["unchanged"] = [m for o in info["operations"] if o["op"] == "apply" and (m := o["module"]) in same]


def _comparison(settings: Settings, plan: Plan, prev: Previous | None) -> dict[str, Any]:
    """The before → after and the cost sections of ``describe``.

    The cost before is the applied values' modules that exist (not those the snapshot records as
    absent, nor those the applied values leave out: ``builder.planning.plan.not_wanted``), each priced as
    applied (what the applied file costs planned alone); the cost after prices each module that exists after the
    build as it will be: a module the plan applies with these values (so with no module left out
    of the build's scope, it is what these values cost planned alone), a module outside the scope
    with the applied values it keeps, a destroyed one not at all."""
    applied = prev.settings if prev is not None else None
    absent = prev.absent if prev is not None else frozenset()
    if applied is not None:  # what the applied values leave out was never created by them
        absent = absent | frozenset(not_wanted(applied))
    d = diff.compare(applied, settings, plan, absent=absent)
    if applied is not None:
        existed = frozenset(m for m in modules(applied.arch) if m not in absent)
        before: cost.Estimate | None = cost.estimate(applied, existed)
    else:
        existed, before = frozenset(), None
    applied_now = frozenset(o.module for o in plan.operations if o.op == "apply")
    destroyed = frozenset(o.module for o in plan.operations if o.op == "destroy")
    kept = existed - applied_now - destroyed
    after_items = cost.estimate(settings, applied_now).items
    if applied is not None and kept:
        after_items = cost.estimate(applied, kept).items + after_items
    after = cost.Estimate(tuple(sorted(after_items, key=lambda i: NAMES.index(i.module))))
    section = money.section(settings, plan, before, after)
    found = candidate_table.costs(settings, applied_now, tuple(i for i in after.items if i.module in kept), after,
                                  granted=stays(settings.candidates, getattr(prev, "granted", None)))
    if found is not None and plan.applies(accelerator_module(settings.arch)):
        section["candidates"] = found
        money.at_worst(section["totals"], found["worst"])
    return {
        "before_after": {"compared_with": prev.source if prev is not None else "nothing", **d.as_dict(),
                         "lines": diff.lines(d)},
        "replacement": replacement.facts(settings, plan, applied, d),
        "move": move.facts(applied, settings, plan),
        "cost": section,
    }


def describe(settings: Settings, plan: Plan | None, *, allow_data_loss: bool = False,
             previous: Previous | None = None, checked: list[Any] | None = None) -> dict[str, Any]:
    """The plan as data: the JSON of ``tpubuild plan --format json`` and the source of its text.

    ``plan`` is None when ``auto`` has nothing to do (``previous.decision`` says why)."""
    s = settings  # the header and the operations describe ``w``, what the plan acts on (``subject``)
    w = subject(settings, plan, previous) if plan is not None else settings
    t = w.topology
    decision = previous.decision if previous is not None else None
    auto_info = None
    if decision is not None:
        auto_info = {"decision": decision.action, "summary": decision.summary(),
                     "modules": sorted(decision.only) if decision.only else [], "reasons": list(decision.reasons),
                     "compared_with": previous.source if previous is not None else ""}
    if plan is None:
        return {"action": "auto", "env": s.env_name, "project_id": s.project_id, "zone": s.zone, "arch": s.arch,
                "path": path_info(s),
                "accelerator_type": s.accelerator_type, "hosts": s.hosts, "auto": auto_info,
                "nothing_to_do": True, "operations": [], "notes": [], "warnings": []}
    info: dict[str, Any] = {
        "action": plan.action,
        "arch": w.arch,
        "path": path_info(w),
        "accelerator_type": w.accelerator_type,
        "hosts": w.hosts,
        "env": w.env_name,
        "project_id": w.project_id,
        "zone": w.zone,
        "generation": t.generation,
        "chips": t.chips,
        "runtime_version": w.runtime_version,
        "provisioning": w.provisioning,
        "queued": w.queued,
        "provisioning_meaning": provisioning_meaning(w),
        **({"slice": {"machine_type": w.mig_shape.machine_type, "vms": w.mig_shape.vms,
                      "topology": w.mig_shape.topology, "provisioning": w.provisioning,
                      "reservation": w.reservation}} if w.arch == "mig" else {}),
        "operations": [{"module": o.module, "op": o.op, "after": list(o.after), "what": _what(w, o.module, o.op)}
                       for o in plan.operations],
        "stages": [[o.module for o in stage] for stage in plan.stages()],
        "steps": [{"id": st.id, "kind": st.kind, "module": st.module, "after": list(st.after)} for st in plan.steps],
        "created": [o.module for o in plan.operations if o.op == "apply" and plan.action is Action.CREATE],
        "changed": [o.module for o in plan.operations if o.op == "apply" and plan.action is Action.UPDATE],
        "destroyed": [o.module for o in plan.operations if o.op == "destroy"],
        "allow_data_loss": allow_data_loss,
        "notes": [],
        "warnings": [],
    }
    if auto_info is not None:
        info["auto"] = auto_info
    listed = candidate_table.section(w, granted=getattr(previous, "granted", None), outcomes=checked)
    if listed is not None:  # a list of candidates, or a granted place: builder/planning/candidate_table.py
        info["candidates"] = listed
    if plan.operations:
        info.update(_comparison(settings, plan, previous))
        info["nothing_to_do"] = info["before_after"]["nothing_to_do"]
        _unchanged_applies(info)
    notes: list[str] = info["notes"]
    warnings: list[str] = info["warnings"]
    if not plan.operations:
        notes.append(INITIALIZE_NOTE + "; the buckets are kept by every later destroy")
        return info
    if plan.action in APPLIES:
        applied = previous.settings if previous is not None else None
        info["not_created"] = plans.not_wanted(s)
        for module, why in info["not_created"].items():
            kept = (previous is not None and applied is not None and applied.arch == s.arch
                    and module not in previous.absent and module not in plans.not_wanted(applied))
            notes.append(f"{module}: not created: {why}" + ("; the one applied before is kept (and billed) until a destroy"
                                                if kept else ""))
    restore = plans.restore_snapshot(s, plan)
    if restore == "latest":
        notes.append(f"shared_pd: {s.shared_pd_name} is restored from the newest snapshot labelled "
                     f"tpubuild-env={s.env_name} (the build fails if there is none)")
    elif restore:
        notes.append(f"shared_pd: {s.shared_pd_name} is restored from snapshot {restore}")
    if plans.seeds(s, plan):
        notes.append(f"shared_pd: after it is applied, {s.gcs_dataset} is copied onto {s.shared_pd_name} "
                     "(shared_pd-seed), before any host attaches it")
    attacher = plans.runs(s, plan, "attach")
    if attacher:
        notes.append(f"{attacher}: the slice is made beside the seed; {attacher}-attach attaches {s.shared_pd_name} "
                     "read-only to every host once it holds the dataset, and the hosts wait for it (their boot log "
                     "says so)" if plans.seeds(s, plan) else
                     f"{attacher}: {attacher}-attach attaches {s.shared_pd_name} read-only to every host after the apply, unless they have it already")
    notes.extend(candidate_table.failover_note(s, plan))
    if plans.runs(s, plan, "snapshot") and not s.moving_from:  # a move's copies: its own note
        notes.append(f"shared_pd: a snapshot of {s.shared_pd_name} is taken before it is destroyed and named "
                     f"in the build log; SHARED_PD_RESTORE=latest restores it")
    if plans.runs(s, plan, "backup") and not s.moving_from:
        notes.append(f"filestore: a backup of {s.filestore_name}:/{s.shared_fs_name} is taken before it is destroyed")
    warnings.extend(sp.lost(s) for sp in plans.loses_data(s, plan) if sp.lost is not None)
    if plan.action is Action.DESTROY:
        notes.append(f"the buckets are kept (gs://{s.state_bucket} holds the Terraform state and the workspace)")
    chips = spec(s.arch, accelerator_module(s.arch))
    assert chips is not None
    record = s.topology.record
    if record.pod_terms and record.is_pod(s.topology.chips) and plan.applies(chips.name) and plan.action in APPLIES:
        warnings.append(f"tpu: {s.accelerator_type} is a {record.name} Pod type: Google offers it only with "
                        f"{record.pod_terms} (cloud.google.com/tpu/pricing), and a project's default Pod quota is 0; "
                        "the hourly price shown is the list price (a commitment's is agreed with Google), and "
                        "`tpubuild plan --check` reads the Pod quota")
    swap = info.get("replacement") or {}
    notes.extend(x["text"] for x in (info.get("move"), swap) if x and x.get("text"))
    if plan.applies(chips.name) and plan.action is Action.UPDATE and "accelerator_type" in chips.replaced_by:
        if swap.get("overlap_minutes") is None and plans.runs(s, plan, "resume"):
            notes.append("tpu: if the change replaces the TPU (a new accelerator type or runtime), the build moves the "
                         f"training: it stops {s.model} at a checkpoint on the old slice and resumes it on the new one "
                         "(make-before-break)")
        elif swap.get("overlap_minutes") is None:
            notes.append("tpu: if the change replaces the TPU (a new accelerator type or runtime), training is "
                         "interrupted; the guard announces it")
    if (plan.applies(chips.name) and plan.action is Action.UPDATE and previous is not None
            and previous.settings is not None
            and "accelerator_type" in chips.replaced_by | chips.hosts_recreated_by):
        # the model's word on its training moving to new hosts (vm: a new TPU VM; mig: a new slice,
        # or every VM of the group recreated): the resume across world sizes

        notes.extend(change_notes(previous.settings, s))
    if queue := plans.runs(s, plan, "queue"):
        wait = queue_wait_s(s)
        limit = f"up to TPU_QUEUED_VALID_FOR={s.queued_valid_for}" if s.queued_valid_for else "until capacity is free"
        notes.append(f"{queue}: queued: after {queue}-apply (the hosts' identity and firewall), {queue}-queue requests "
                     f"{s.tpu_name} "
                     f"with `gcloud compute tpus queued-resources create`; it may wait {limit}, and the build waits "
                     f"for it to become ACTIVE for at most {wait // 3600}h{wait % 3600 // 60:02d}m (then the build fails "
                     "and the request stays queued: run update to wait again)")
        if plan.action is Action.UPDATE:
            notes.append(f"{queue}: queued: if the accelerator type or runtime changed, queued resource "
                         f"{s.tpu_name} is replaced: training interrupted; the new slice waits in the queue")
    if calendar := plans.runs(s, plan, "calendar"):
        notes.append(f"{calendar}: calendar: after {calendar}-apply, {calendar}-calendar submits the calendar-mode "
                     f"request with gcloud (the pinned google-beta provider cannot request {s.mig_shape.generation}) "
                     "and waits for Google's decision; a submitted request cannot be cancelled or changed")
    if w.provisioning == "calendar" and plan.destroys(accelerator_module(w.arch)):
        notes.append("calendar: Google cannot cancel the calendar-mode request: the destroy forgets it, and the "
                     f"reservation stays billed until its end ({w.calendar_days} days from {w.calendar_start})")
    if unqueue := plans.runs(s, plan, "unqueue"):
        notes.append(f"{unqueue}: queued resource {s.tpu_name} (and its TPU VM) is deleted by {unqueue}-unqueue "
                     f"before the {unqueue} module's Terraform destroy")
    if s.env_ttl_hours and s.arch != "node":
        info["ttl"] = ttl.plan_info(s, applies_tpu=plan.applies(chips.name)
                                     and plan.action is not Action.DESTROY)
        notes.append(f"ttl: {info['ttl']['text']}")
    if s.recovery and plan.action in APPLIES and plan.applies(chips.name):
        notes.append(f"recovery: {recovery.plan_text(s)}")
    if plan.action in APPLIES:
        if allow_data_loss:
            warnings.append("data loss is allowed: the guards let plans destroy or replace Filestore and the "
                            "shared PD (_ALLOW_DATA_LOSS=true)")
        else:
            notes.append("a guard checks every Terraform plan and refuses, before it is applied, one that destroys or "
                         "replaces Filestore or the shared PD (override: _ALLOW_DATA_LOSS=true)")
        if info["path"]["warning"]:  # building on an API Google no longer develops (a destroy only leaves it)
            warnings.append(info["path"]["warning"])
    return info


def step_lines(steps: list[dict[str, Any]]) -> list[str]:
    """The pipeline's steps, one line per module (``mig: plan → guard → drain → apply → resize``;
    each step's id is ``<module>-<name>``: its kind, or a move's release-plan) and one per build-wide
    step, in the build's order."""
    out: list[str] = []
    current = None
    for st in steps:
        name = str(st["id"]).removeprefix(f"{st['module']}-")
        if st["module"] and st["module"] == current:
            out[-1] += f" → {name}"
        elif st["module"]:
            out.append(f"{st['module']}: {name}")
        else:
            out.append(st["id"])
        current = st["module"]
    return out


def as_text(info: dict[str, Any], *, bold: bool) -> str:
    def strong(text: str) -> str:
        return f"\033[1m{text}\033[0m" if bold else f"**{text}**"

    hosts = info["hosts"]
    auto_info = info.get("auto")
    if auto_info is not None and auto_info["decision"] == Verdict.NOTHING:
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
    lines.append(f"  path:         {info['path']['text']}")
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
    if "candidates" in info:
        lines += [*candidate_table.lines(info["candidates"]), ""]
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
    lines += money.lines(info["cost"])
    lines.append("")
    lines.append("Operations, in order:")
    ops = {o["module"]: o for o in info["operations"]}
    kinds = {st["id"]: st["kind"] for st in info["steps"]}
    # a module beside another whose account its hosts run as: its apply waits for that account (mig)
    made = {st["module"]: [w for w in st["after"] if kinds.get(w) == "identity"] for st in info["steps"] if st["kind"] == "apply"}
    for n, stage in enumerate(info["stages"], 1):
        lines.append(f"  stage {n}{', in parallel' if len(stage) > 1 else ''}:")
        for module in stage:
            o = ops[module]
            after = f"  (after {', '.join(o['after'])})" if o["after"] else ""
            if made.get(module):
                after += f"  (its apply after {', '.join(made[module])}: the account its hosts run as)"
            lines.append(f"    {o['op']:<7}  {module:<9}  {o['what']}{after}")
    lines.append("")
    lines.append("Pipeline steps, as `tpubuild render` lists them:")
    lines.extend(f"  {line}" for line in step_lines(info["steps"]))
    lines.append("")
    for label, key in (("Created", "created"), ("Created or changed", "changed"), ("Destroyed", "destroyed")):
        if info[key]:
            lines.append(f"{label}: {', '.join(info[key])}")
    untouched = [m for m in modules(info["arch"])
                 if (m not in ops or m in info.get("unchanged", ())) and m not in info.get("not_created", {})]
    if info.get("not_created"):
        lines.append(f"Not created: {', '.join(info['not_created'])}")
    if untouched:
        again = [m for m in untouched if m in info.get("unchanged", ())]
        lines.append(f"Untouched: {', '.join(untouched)}"
                     + (" (each is applied again and nothing changes)" if again == untouched else
                        f" ({', '.join(again)}: applied again, nothing changes)" if again else ""))
    if info["notes"] or info["warnings"]:
        lines.append("")
    lines.extend(strong(f"WARNING: {w}") for w in info["warnings"])
    lines.extend(f"note: {n}" for n in info["notes"])
    return "\n".join(lines) + "\n"

