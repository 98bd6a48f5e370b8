"""Before → after: what an action changes, module by module, against the last applied values.

``compare(applied, target, plan)`` is pure. It compares the Terraform variables
(``builder.inputs.tfvars.for_module``) that the applied values.env gave each module with those the
target gives, and says per module whether it is created, changed in place, replaced, resized,
destroyed or untouched; which variables change (``target_size 4 → 16``,
``accelerator_type v3-32 → v3-128``); whether any host is recreated and whether training is
interrupted. ``tpubuild plan`` prints it and ``plan --format json`` carries it.

Which variable change replaces what is the provider's ``ForceNew`` behaviour (provider 6.50):

* ``tpu`` (``google_tpu_v2_vm`` / ``google_tpu_node``): every argument except ``labels`` and the
  host metadata (mount point, setup script) forces a new TPU: the slice is deleted and created
  again, every host with it, and training is interrupted.
* ``mig`` (the slice, TPU_ARCH=mig): anything in the workload policy or the instance template
  (accelerator type and topology, machine type, image, boot disk, IPs, provisioning, metadata)
  makes a new template and the group replaces every host (training interrupted); a new topology
  drains the slice first (``mig-drain``). Under make-before-break (TPU_REPLACE, the default but
  for calendar mode) the same change *replaces* the slice: a second MIG is made beside the running
  one, which keeps training until the swap. Its TTL job changes in place. (The node roots are
  destroy only: nothing of theirs changes.)
* ``filestore``: ``capacity_gb`` grows in place (a smaller capacity, a new tier, name, share or
  network replaces the instance: its data is lost unless backed up; the guard refuses it).
* ``shared_pd``: ``size_gb`` grows in place; a smaller size, a new type or snapshot replaces the
  disk (the guard refuses it without ``_ALLOW_DATA_LOSS``).
* The hosts' service account, firewall and dataset grant (``dataset_bucket``, ``env_name``,
  ``state_bucket``, ``service_account_id``) change in place, beside the machines.

With no applied snapshot every module the plan applies is *created* (``lines`` says what that
means for update and destroy). Which variable does what is each module's catalogue entry
(``replaced_by``, ``hosts_recreated_by``, ``drained_by``, ``resized_by``, ``grows`` in
``builder.catalogue.modules``); the list above is what those entries say.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from builder.catalogue import modules as catalogue
from builder.catalogue.module_parts import replacing
from builder.catalogue.modules import ModuleSpec, accelerator_module, hosts_module
from builder.facts.actions import Action
from builder.facts.records import asdict, field, record
from builder.inputs import tfvars

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings
    from builder.planning.plan import Plan

@record
class Change:
    var: str
    before: Any
    after: Any
    effect: str  # replace | in-place | resize | rolling

    def text(self) -> str:
        shown = _TEXT.get(self.var)
        if shown is not None:
            return shown(self.before, self.after)
        before, after = _show(self.before), _show(self.after)
        if max(len(before), len(after)) > LONGEST_SHOWN:  # a document (the dashboard's JSON): named, not printed twice
            return f"{self.var}: its value changes ({len(before):,} → {len(after):,} characters; tpubuild render shows it)"
        return f"{self.var} {before} → {after}"


#: The longest value a before → after prints; a longer one (a JSON document) is summarised.
LONGEST_SHOWN = 200


def _ttl(hours: Any) -> str:
    return f"{hours} h" if hours else "off"


#: Variables shown as a summary rather than their raw value (the TTL's destroy build and the
#: health check's build are JSON Build requests that ``tpubuild render`` prints whole).
_TEXT: dict[str, Callable[[Any, Any], str]] = {
    "ttl_hours": lambda old, new: f"ttl: {_ttl(old)} → {_ttl(new)}",
    "ttl_build_body": lambda old, new: "ttl: its destroy build changes (tpubuild render shows it)",
    "health_build_body": lambda old, new: (f"recovery: {'auto' if old else 'off'} → {'auto' if new else 'off'}"
                                           if bool(old) != bool(new) else
                                           "recovery: its health build changes (tpubuild render shows it)"),
}
#: A variable derived from another: left out of the changes when that one changes too.
_DERIVED: dict[str, str] = {"ttl_build_body": "ttl_hours",
                            # a move's own variables, set because the zone changes (the move section says it)
                            "move": "zone", "previous_zone": "zone"}


@record
class ModuleDiff:
    module: str
    status: str  # create | update | resize | replace | unchanged | destroy | untouched | absent
    changes: tuple[Change, ...] = ()
    hosts_recreated: bool = False
    interrupts_training: bool = False
    loses_data: bool = False
    note: str = ""


@record
class Diff:
    applied: bool  # whether there was an applied snapshot to compare with
    modules: tuple[ModuleDiff, ...]
    hosts_before: int
    hosts_after: int
    accelerator_before: str
    accelerator_after: str
    notes: tuple[str, ...] = field(default=())
    action: Action = Action.CREATE
    other_arch: str = ""  # the applied values' TPU_ARCH when it is not the plan's (then not compared)

    @property
    def hosts_recreated(self) -> bool:
        return any(m.hosts_recreated for m in self.modules)

    @property
    def interrupts_training(self) -> bool:
        return any(m.interrupts_training for m in self.modules)

    @property
    def nothing_to_do(self) -> bool:
        return all(m.status in ("unchanged", "untouched", "absent") for m in self.modules)

    def get(self, module: str) -> ModuleDiff | None:
        return next((m for m in self.modules if m.module == module), None)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["hosts_recreated"] = self.hosts_recreated
        out["interrupts_training"] = self.interrupts_training
        out["nothing_to_do"] = self.nothing_to_do
        return out


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value == "" or value is None:
        return '""'
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in sorted(value.items())) or "{}"
    return str(value)


def _effect(spec: ModuleSpec, var: str, old: Any, new: Any, replaced_by: frozenset[str]) -> str:
    """What changing ``var`` does to the module (``replaced_by``: builder.catalogue.module_parts.replacing, the
    catalogue entry's ``replaced_by`` and, making before breaking, what recreates its hosts; then kin)."""
    if var in replaced_by:
        return "replace"
    if var in spec.resized_by:
        return "resize"
    if var in spec.hosts_recreated_by:
        return "rolling"
    if var == spec.grows:
        return "in-place" if isinstance(old, int) and new > old else "replace"
    return "in-place"


def module_changes(applied: Settings, target: Settings, module: str) -> tuple[Change, ...]:
    """Every variable of ``module`` whose value differs, with what the change does. A variable
    derived from others that are shown (the TTL's destroy build from ``ttl_hours``) is left out."""
    before, after = tfvars.for_module(applied, module), tfvars.for_module(target, module)
    spec = catalogue.spec(target.arch, module)
    assert spec is not None, module
    replaced_by = replacing(spec, target)
    out = []
    for var in after:
        old, new = before.get(var), after[var]
        source = _DERIVED.get(var)
        if old == new or (source is not None and source in after and before.get(source) != after[source]):
            continue
        if var == "zone" and spec.zone_free is not None and all(spec.zone_free(s) for s in (applied, target)):
            continue  # a REGIONAL or ENTERPRISE share lives in the region: a zone moves nothing
        out.append(Change(var, old, new, _effect(spec, var, old, new, replaced_by)))
    return tuple(out)


def _module_diff(applied: Settings, target: Settings, module: str) -> ModuleDiff:
    changes = module_changes(applied, target, module)
    if not changes:
        return ModuleDiff(module, "unchanged")
    spec = catalogue.spec(target.arch, module)
    assert spec is not None, module
    effects = {c.effect for c in changes}
    if "replace" in effects:
        status = "replace"
    elif "rolling" in effects:
        status = "update"
    elif effects == {"resize"}:
        status = "resize"
    else:
        status = "update"
    recreated = spec.hosts and (status == "replace" or "rolling" in effects)
    # a resize gives the job a new world size: it must restart on the new host count
    interrupts = (spec.training and status == "replace") or recreated or "resize" in effects
    loses = spec.holds_data and status == "replace"
    # a move to another zone (builder/planning/move.py): made beside the old one from a copy of it
    moved_here = loses and target.move and applied.zone != target.zone and {
        c.var for c in changes if c.effect == "replace"} <= {"zone", "region"}
    loses = loses and not moved_here
    note = ""
    if status == "replace" and spec.training:
        # make-before-break with a MODEL: the build stops it at a checkpoint and resumes it (tpu-resume)
        moved = any(x.kind == "resume" and x.when(target) for x in spec.steps)
        note = ("replaced beside the running slice: the build moves the training at a checkpoint" if moved
                else "replaced: training interrupted")
    elif recreated and any(c.var in spec.drained_by for c in changes):
        note = "the slice is drained first (a new workload policy) and every host recreated: training interrupted"
    elif recreated:
        note = "every host is recreated: training interrupted"
    elif status == "resize":
        note = "hosts added or removed; the others keep running (training restarts on the new size)"
    elif moved_here:
        note = (f"moved: made in {target.zone} from a copy of the one in {applied.zone}, which is deleted last "
                "(the move, below)")
    elif loses:
        note = "replaced: its data is lost (the guard refuses it without _ALLOW_DATA_LOSS=true)"
    elif spec.hosts and effects == {"in-place"}:
        note = "changed in place; hosts keep running (boot settings apply at their next boot)"
    return ModuleDiff(module, status, changes, recreated, interrupts, loses, note)


def compare(applied: Settings | None, target: Settings, plan: Plan, *,
            absent: frozenset[str] = frozenset()) -> Diff:
    """What ``plan`` changes relative to ``applied`` (None: nothing was applied yet)."""
    modules = catalogue.modules(target.arch)
    notes: tuple[str, ...] = ()
    other_arch = ""
    host_mod, accel_mod = hosts_module(target.arch), accelerator_module(target.arch)
    if applied is not None and applied.arch != target.arch:
        # another architecture: its modules are not these (auto refuses this; create builds beside
        # it), but its hosts and chips are there before the build
        other_arch, host_mod, accel_mod = applied.arch, hosts_module(applied.arch), accelerator_module(applied.arch)
    hosts_before = applied.hosts if applied is not None and host_mod not in absent else 0
    accel_before = applied.accelerator_type if applied is not None and accel_mod not in absent else ""
    if other_arch:
        applied = None
        host_mod, accel_mod = hosts_module(target.arch), accelerator_module(target.arch)
    hosts_after = hosts_before
    accel_after = accel_before
    out: list[ModuleDiff] = []
    for module in modules:
        op = plan.get(module)
        spec = catalogue.spec(target.arch, module)
        assert spec is not None, module
        exists = applied is not None and module not in absent
        if op is None:
            if not exists:
                out.append(ModuleDiff(module, "absent"))
                continue
            drift = module_changes(applied, target, module) if applied is not None else ()
            note = _outside_scope(target, plan, spec, drift) if drift else ""
            out.append(ModuleDiff(module, "untouched", note=note))
            continue
        if op.op == "destroy":
            if not exists and applied is not None:
                note = "not applied (nothing to destroy)"
                if not spec.is_wanted(applied):  # an older tpubuild created it even so: destroy takes it
                    note = (f"not created by the applied values: {spec.unwanted_why}; one an older tpubuild "
                            "created is destroyed")
                out.append(ModuleDiff(module, "destroy", note=note))
                continue
            out.append(ModuleDiff(module, "destroy", hosts_recreated=False, interrupts_training=spec.training,
                                  loses_data=spec.holds_data, note="training stops" if spec.training else ""))
            if module == host_mod:
                hosts_after = 0
            if module == accel_mod:
                accel_after = ""
            continue
        if not exists:
            out.append(ModuleDiff(module, "create"))
        else:
            assert applied is not None
            out.append(_module_diff(applied, target, module))
        if module == host_mod:
            hosts_after = target.hosts
        if module == accel_mod:
            accel_after = target.accelerator_type
    return Diff(applied is not None, tuple(out), hosts_before, hosts_after, accel_before, accel_after, notes,
                action=plan.action, other_arch=other_arch)


#: What "nothing to compare with" means for each action.
_UNKNOWN: dict[Action, str] = {
    Action.CREATE: "every module this action applies is created",
    Action.UPDATE: "each module this action applies is created if it does not exist, else changed to these values",
    Action.DESTROY: "each module this action destroys is destroyed if it exists (one never applied is left as it is)",
}


def lines(diff: Diff) -> list[str]:
    """The text of ``tpubuild plan``'s "Before → after" section."""
    out: list[str] = []
    out.extend(diff.notes)
    if diff.other_arch:
        out.append(f"the applied environment is another architecture (TPU_ARCH={diff.other_arch}): its modules are "
                   f"not compared with these; {_UNKNOWN.get(diff.action, _UNKNOWN[Action.CREATE])}")
    elif not diff.applied:
        out.append(f"no applied snapshot to compare with: {_UNKNOWN.get(diff.action, _UNKNOWN[Action.CREATE])}")
    for m in diff.modules:
        if m.status in ("unchanged", "untouched", "absent"):
            continue
        head = f"{m.module}: {m.status}"
        if m.changes:
            head = f"{m.module}: " + ", ".join(c.text() for c in m.changes)
        if m.note:
            head += f" ({m.note})"
        out.append(head)
    if diff.hosts_before != diff.hosts_after or diff.accelerator_before != diff.accelerator_after:
        accel = (f", {diff.accelerator_before or 'none'} → {diff.accelerator_after or 'none'}"
                 if diff.accelerator_before != diff.accelerator_after else "")
        out.append(f"hosts: {diff.hosts_before} → {diff.hosts_after}{accel}")
    unchanged = [m.module for m in diff.modules if m.status in ("unchanged", "untouched")]
    if unchanged:
        out.append(f"untouched: {', '.join(unchanged)}")
    for m in diff.modules:
        if m.status == "untouched" and m.note:
            out.append(f"{m.module}: {m.note}")
    if diff.applied:
        out.append("hosts recreated: " + ("yes" if diff.hosts_recreated else "no")
                   + ("; training is interrupted" if diff.interrupts_training else ""))
    if diff.nothing_to_do and any(m.status == "untouched" and m.note for m in diff.modules):
        out.append("nothing to do in this build's scope: the modules it applies already have these values")
    elif diff.nothing_to_do:
        out.append("nothing to do: every module already has these values")
    return out


def _what(target: Settings, module: str) -> str:
    found = catalogue.spec(target.arch, module)
    return found.what(target) if found is not None else module


def _outside_scope(target: Settings, plan: Plan, spec: ModuleSpec, drift: tuple[Change, ...]) -> str:
    """What the before → after says of a module left out of the build whose values changed: that
    it keeps the applied ones, and which request applies it. When the scope flags name another
    module and this one is the slice (mig's ``--tpu``: the slice's identity and firewall, not the
    slice), it says what the flags given do apply, so a flag that does not change the slice is not
    read as one that does."""
    flags = {m: f"--{m} (_{m.upper()}=true)" for m in catalogue.SCOPED if catalogue.spec(target.arch, m) is not None}
    changed = f"({', '.join(c.var for c in drift)}) and this build leaves it as applied"
    named = [m for m in sorted(catalogue.in_scope(tpu=plan.tpu, mig=plan.mig)) if m != spec.name and m in flags]
    if spec.accelerator and spec.scoped and named and plan.only is None:
        given = "; ".join(f"{flags[m]} applies only {m}, {_what(target, m)}" for m in named)
        return (f"the slice differs from the applied values {changed}: on {target.arch}, {given}; "
                f"{flags[spec.name]} changes the slice")
    if plan.only is not None:
        how = f"add {spec.name} to --only to apply it"
    elif spec.scoped:
        how = f"{flags[spec.name]} applies it"
    else:
        how = f"an update without {' or '.join(flags.values())} applies it"
    return f"differs from the applied values {changed}: {how}"
