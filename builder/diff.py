"""Before → after: what an action changes, module by module, against the last applied values.

``compare(applied, target, plan)`` is pure. It compares the Terraform variables
(``builder.tfvars.for_module``) that the applied values.env gave each module with those the
target gives, and says per module whether it is created, changed in place, replaced, resized,
destroyed or untouched; which variables change (``target_size 4 → 16``,
``accelerator_type v3-32 → v3-128``); whether any host is recreated and whether training is
interrupted. ``tpubuild plan`` prints it and ``plan --format json`` carries it.

Which variable change replaces what is the provider's ``ForceNew`` behaviour (provider 6.50):

* ``tpu`` (``google_tpu_v2_vm`` / ``google_tpu_node``): every argument except ``labels`` and the
  host metadata (mount point, setup script) forces a new TPU: the slice is deleted and created
  again, every host with it, and training is interrupted.
* ``mig``: ``target_size`` resizes the group (hosts are added or removed, the others keep
  running); anything in the instance template (machine type, image, boot disk, IPs, metadata)
  makes a new template and the group replaces every host (training interrupted).
* ``filestore``: ``capacity_gb`` grows in place (a smaller capacity, a new tier, name, share or
  network replaces the instance: its data is lost unless backed up; the guard refuses it).
* ``shared_pd``: ``size_gb`` grows in place; a smaller size, a new type or snapshot replaces the
  disk (the guard refuses it without ``_ALLOW_DATA_LOSS``).
* The hosts' service account, firewall and dataset grant (``dataset_bucket``, ``env_name``,
  ``state_bucket``, ``service_account_id``) change in place, beside the machines.

With no applied snapshot every module the plan applies is *created*.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from builder import modules as catalogue
from builder import tfvars
from builder.modules import DATA_MODULES, hosts_module

if TYPE_CHECKING:  # pragma: no cover
    from builder.config import Settings
    from builder.plan import Plan

#: Variables whose change replaces the module's main resource (per plan module / arch).
_REPLACES: dict[str, frozenset[str]] = {
    "tpu_vm": frozenset({"project_id", "zone", "name", "accelerator_type", "runtime_version", "network",
                         "subnetwork", "external_ips", "preemptible", "spot", "reserved", "shared_pd_attach"}),
    "tpu_node": frozenset({"project_id", "zone", "name", "accelerator_type", "runtime_version", "cidr_block",
                           "network", "preemptible"}),
    "filestore": frozenset({"project_id", "region", "zone", "name", "tier", "share_name", "network"}),
    "shared_pd": frozenset({"project_id", "zone", "name", "type", "snapshot"}),
    # mig: a new instance template rolls every host (see _ROLLING); these recreate the group itself
    "mig": frozenset({"project_id", "zone", "name"}),
}
#: mig variables that live in the instance template: a change replaces every host (rolling).
_ROLLING: frozenset[str] = frozenset({"machine_type", "source_image_family", "source_image_project",
                                      "image_version", "boot_disk_size_gb", "external_ip", "network",
                                      "subnetwork", "shared_pd_attach", "mount_point", "setup_script"})
#: Sizes that grow in place and replace when they shrink.
_GROWS: dict[str, str] = {"filestore": "capacity_gb", "shared_pd": "size_gb"}


@dataclass(frozen=True)
class Change:
    var: str
    before: Any
    after: Any
    effect: str  # replace | in-place | resize | rolling

    def text(self) -> str:
        return f"{self.var} {_show(self.before)} → {_show(self.after)}"


@dataclass(frozen=True)
class ModuleDiff:
    module: str
    status: str  # create | update | resize | replace | unchanged | destroy | untouched | absent
    changes: tuple[Change, ...] = ()
    hosts_recreated: bool = False
    interrupts_training: bool = False
    loses_data: bool = False
    note: str = ""


@dataclass(frozen=True)
class Diff:
    applied: bool  # whether there was an applied snapshot to compare with
    modules: tuple[ModuleDiff, ...]
    hosts_before: int
    hosts_after: int
    accelerator_before: str
    accelerator_after: str
    notes: tuple[str, ...] = field(default=())

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


def _table(settings: Settings, module: str) -> str:
    if module == "tpu":
        return "tpu_node" if settings.arch == "node" else "tpu_vm"
    return module


def module_changes(applied: Settings, target: Settings, module: str) -> tuple[Change, ...]:
    """Every variable of ``module`` whose value differs, with what the change does."""
    before, after = tfvars.for_module(applied, module), tfvars.for_module(target, module)
    table = _table(target, module)
    replaces = _REPLACES.get(table, frozenset())
    out = []
    for var in after:
        old, new = before.get(var), after[var]
        if old == new:
            continue
        if var in replaces:
            effect = "replace"
        elif module == "mig" and var == "target_size":
            effect = "resize"
        elif module == "mig" and var in _ROLLING:
            effect = "rolling"
        elif _GROWS.get(module) == var:
            effect = "in-place" if isinstance(old, int) and new > old else "replace"
        else:
            effect = "in-place"
        out.append(Change(var, old, new, effect))
    return tuple(out)


def _module_diff(applied: Settings, target: Settings, module: str) -> ModuleDiff:
    changes = module_changes(applied, target, module)
    if not changes:
        return ModuleDiff(module, "unchanged")
    effects = {c.effect for c in changes}
    hosts = module == hosts_module(target.arch)
    if "replace" in effects:
        status = "replace"
    elif "rolling" in effects:
        status = "update"
    elif effects == {"resize"}:
        status = "resize"
    else:
        status = "update"
    recreated = hosts and (status == "replace" or "rolling" in effects)
    interrupts = (module == "tpu" and status == "replace") or recreated
    if module == "mig" and "resize" in effects and not recreated:
        interrupts = True  # a new world size: the running job must restart on the new host count
    loses = module in DATA_MODULES and status == "replace"
    note = ""
    if status == "replace" and module == "tpu":
        note = "replaced: training interrupted"
    elif recreated:
        note = "every host is recreated: training interrupted"
    elif status == "resize":
        note = "hosts added or removed; the others keep running (training restarts on the new size)"
    elif loses:
        note = "replaced: its data is lost (the guard refuses it without _ALLOW_DATA_LOSS=true)"
    elif hosts and effects == {"in-place"}:
        note = "changed in place; hosts keep running (boot settings apply at their next boot)"
    return ModuleDiff(module, status, changes, recreated, interrupts, loses, note)


def compare(applied: Settings | None, target: Settings, plan: Plan, *,
            absent: frozenset[str] = frozenset()) -> Diff:
    """What ``plan`` changes relative to ``applied`` (None: nothing was applied yet)."""
    modules = catalogue.modules(target.arch)
    if applied is not None and applied.arch != target.arch:
        applied = None  # another architecture: nothing carries over (auto refuses this; create would rebuild)
    host_mod = hosts_module(target.arch)
    had_hosts = applied is not None and host_mod not in absent
    hosts_before = applied.hosts if had_hosts and applied is not None else 0
    accel_before = applied.accelerator_type if had_hosts and applied is not None else ""
    hosts_after = hosts_before
    accel_after = accel_before
    out: list[ModuleDiff] = []
    for module in modules:
        op = plan.get(module)
        exists = applied is not None and module not in absent
        if op is None:
            if not exists:
                out.append(ModuleDiff(module, "absent"))
                continue
            drift = module_changes(applied, target, module) if applied is not None else ()
            note = (f"differs from the applied values ({', '.join(c.var for c in drift)}) but is outside this "
                    "build's scope: it keeps the applied values") if drift else ""
            out.append(ModuleDiff(module, "untouched", note=note))
            continue
        if op.op == "destroy":
            if not exists and applied is not None:
                out.append(ModuleDiff(module, "destroy", note="not applied (nothing to destroy)"))
                continue
            hosts = module == host_mod
            out.append(ModuleDiff(module, "destroy", hosts_recreated=False,
                                  interrupts_training=module in ("tpu", "mig"),
                                  loses_data=module in DATA_MODULES,
                                  note="training stops" if module in ("tpu", "mig") else ""))
            if hosts or module == "tpu":
                if module == host_mod:
                    hosts_after = 0
                if module == "tpu":
                    accel_after = ""
            continue
        if not exists:
            out.append(ModuleDiff(module, "create"))
        else:
            assert applied is not None
            out.append(_module_diff(applied, target, module))
        if module == host_mod:
            hosts_after = target.hosts
        if module == "tpu":
            accel_after = target.accelerator_type
    return Diff(applied is not None, tuple(out), hosts_before, hosts_after, accel_before, accel_after)


def lines(diff: Diff) -> list[str]:
    """The text of ``tpubuild plan``'s "Before → after" section."""
    out: list[str] = []
    if not diff.applied:
        out.append("no applied snapshot to compare with: every module this action applies is created")
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
    if diff.nothing_to_do:
        out.append("nothing to do: every module already has these values")
    return out
