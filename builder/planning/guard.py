"""The plan guard: read ``terraform show -json`` of a saved plan and decide whether to apply it.

Pure: :func:`evaluate` takes the parsed JSON document, the plan module, the action and the
``_ALLOW_DATA_LOSS`` override and returns a :class:`Decision`. Reading the file is the command's
job (``builder/commands/guard.py``).

Rules (see docs/safety.md):

* What a resource holds decides, not which module it is in: :mod:`builder.catalogue.guard_classes` is the
  one table (disks of every kind, snapshots, images, Filestore instances, backups and snapshots,
  buckets, objects and folders hold data; unclassified types whose names sound like data count too).
* During ``create``, ``update`` and ``auto``, a plan that destroys or replaces a data-holding
  resource is refused unless ``allow_data_loss`` is set. "Destroys or replaces" means the resource change's
  ``actions`` contain ``"delete"``: ``["delete"]``, ``["delete", "create"]`` (replace) and
  ``["create", "delete"]`` (create-before-destroy replace).
* ``forget`` (Terraform >= 1.7 ``removed`` blocks with ``destroy = false``; ``["forget"]`` or
  ``["create", "forget"]``) of a data holder is refused like a delete, in every action, with its
  own message: the data keeps existing but no tpubuild step (destroy, snapshot, backup, status)
  knows it any more. ``allow_data_loss`` accepts it.
* An action combination Terraform does not document (:data:`KNOWN_ACTIONS`) is refused.
* During ``destroy`` deleting the data holders the modules declare (:data:`PROTECTED_TYPES`, each
  catalogue entry's ``data_resources``: the Filestore instance, the shared PD) is the point (the
  pipeline snapshots the shared PD and backs up Filestore on tiers with backups first); deleting
  any other data holder (a snapshot, a backup, a bucket: the copies themselves) is refused without
  ``allow_data_loss``. A destroy plan must not create or update anything. A type names what it
  is whatever module's plan it appears in.
* The release of a move to another zone (docs/capacity.md, "Moving an environment to another
  zone"): a Filestore instance or disk deleted while one of its type and name is kept in another
  location, made from a copy (``source_backup``, ``snapshot``), is not lost: its copy holds what it
  held (:func:`moved_copy`); it is announced, never refused. Anything else deleted is.
* Replacing or deleting a TPU (:data:`TPU_TYPES`, the entries' ``training_resources``) is allowed
  but announced, with the entry's ``replace_warning``: it interrupts training.
* Deleting, replacing or forgetting a capacity request (``guard_classes.CAPACITY``: a flex-start
  resize request, a calendar-mode future reservation) is allowed but announced in every action:
  capacity the slice waits on or runs on is given up (a calendar request is billed to its end).
* A plan Terraform marked ``errored`` (or not ``applyable`` when there is something to do) is
  refused; a document that is not a Terraform plan is bad input.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from builder.catalogue import guard_classes
from builder.catalogue.modules import DESTROYED_ON_PURPOSE, NAMES, SLICE_RESOURCES, TRAINING_RESOURCES
from builder.facts.actions import GUARD_ACTIONS, Action
from builder.facts.errors import BadInput
from builder.facts.records import record

#: Plan modules and the actions whose pipelines apply Terraform plans (builder.catalogue.modules).
MODULES: tuple[str, ...] = NAMES
ACTIONS: tuple[Action, ...] = GUARD_ACTIONS

#: The data holders a ``destroy`` deletes on purpose, after the pipeline snapshotted/backed them up.
PROTECTED_TYPES: dict[str, str] = DESTROYED_ON_PURPOSE
#: TPU resource types → what their replacement means: it interrupts training.
TPU_TYPES: dict[str, str] = TRAINING_RESOURCES
#: Every action list ``terraform show -json`` writes (Terraform 1.11: plans.Action's JSON forms).
KNOWN_ACTIONS: frozenset[tuple[str, ...]] = frozenset({
    ("no-op",), ("create",), ("read",), ("update",), ("delete",), ("delete", "create"), ("create", "delete"),
    ("forget",), ("create", "forget"),
})


def loses(rtype: str) -> str:
    return PROTECTED_TYPES.get(rtype) or guard_classes.what(rtype)

OVERRIDE = "_ALLOW_DATA_LOSS=true"
_KNOWN_ACTIONS = frozenset({"no-op", "create", "read", "update", "delete", "forget"})
_SUPPORTED_FORMAT_MAJOR = "1"


@record
class Change:
    """One managed resource's planned change."""

    address: str
    type: str
    actions: tuple[str, ...]
    replace_paths: tuple[str, ...] = ()
    deposed: bool = False

    @property
    def kind(self) -> str:
        """``create``, ``update``, ``replace``, ``delete``, ``no-op``, ``read`` or ``forget``."""
        if "delete" in self.actions and "create" in self.actions:
            return "replace"
        if "forget" in self.actions:
            return "forget"
        if "delete" in self.actions:
            return "delete"
        return self.actions[0] if self.actions else "no-op"

    @property
    def destroys(self) -> bool:
        return "delete" in self.actions

    @property
    def forgets(self) -> bool:
        return "forget" in self.actions

    @property
    def holds_data(self) -> bool:
        return guard_classes.holds_data(self.type)

    def describe(self) -> str:
        verb = {"replace": "replaced", "delete": "destroyed", "forget": "forgotten"}.get(self.kind, self.kind)
        why = f" ({', '.join(self.replace_paths)} forces replacement)" if self.replace_paths else ""
        deposed = " (a deposed object left by an earlier failed apply)" if self.deposed else ""
        return f"{self.address} would be {verb}{why}{deposed}"


@record
class Decision:
    """What the guard decided. ``refusal`` is the one line printed when ``proceed`` is false."""

    proceed: bool
    module: str
    action: Action
    changes: tuple[Change, ...]
    refusal: str = ""
    warnings: tuple[str, ...] = ()

    def counts(self) -> dict[str, int]:
        out = {"create": 0, "update": 0, "replace": 0, "delete": 0, "forget": 0}
        for c in self.changes:
            if c.kind in out:
                out[c.kind] += 1
        return out

    def summary(self) -> str:
        n = self.counts()
        verdict = "proceed" if self.proceed else "REFUSED"
        forget = f", {n['forget']} to forget" if n["forget"] else ""
        return (f"guard: {self.module} ({self.action}): {n['create']} to add, {n['update']} to change, "
                f"{n['replace']} to replace, {n['delete']} to destroy{forget}; {verdict}")


def check_args(module: str, action: Action | str) -> Action:
    """The module and the action of a guard run, the action as an :class:`Action`; else one line."""
    if module not in MODULES:
        raise BadInput(f"--module {module!r} is not a plan module; use one of {', '.join(MODULES)}")
    if action not in ACTIONS:
        hint = " (initialize runs no Terraform)" if action == Action.INITIALIZE else ""
        raise BadInput(f"--action {str(action)!r} is not an action that applies a plan{hint}; "
                       f"use one of {', '.join(ACTIONS)}")
    return Action(action)


def changes_of(doc: Any, source: str = "plan") -> tuple[Change, ...]:
    """The managed resource changes of a ``terraform show -json`` document, checked for shape."""
    if not isinstance(doc, Mapping):
        raise BadInput(f"{source}: is not a Terraform plan (expected a JSON object); "
                       "pass the output of 'terraform show -json PLANFILE'")
    fmt = doc.get("format_version")
    if not isinstance(fmt, str) or "resource_changes" not in doc and "planned_values" not in doc:
        raise BadInput(f"{source}: has no format_version/planned_values, so it is not "
                       "'terraform show -json' output of a saved plan; pass that output")
    if fmt.split(".")[0] != _SUPPORTED_FORMAT_MAJOR:
        raise BadInput(f"{source}: format_version {fmt!r} is not supported (need 1.x); "
                       "use Terraform 1.x to produce the plan JSON")
    raw = doc.get("resource_changes", [])
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        raise BadInput(f"{source}: resource_changes is not a list; pass unmodified 'terraform show -json' output")
    out: list[Change] = []
    for i, rc in enumerate(raw):
        where = f"{source}: resource_changes[{i}]"
        if not isinstance(rc, Mapping):
            raise BadInput(f"{where} is not an object; pass unmodified 'terraform show -json' output")
        address, rtype, change = rc.get("address"), rc.get("type"), rc.get("change")
        if not isinstance(address, str) or not isinstance(rtype, str) or not isinstance(change, Mapping):
            raise BadInput(f"{where} lacks address, type or change; pass unmodified 'terraform show -json' output")
        if not (address.isprintable() and rtype.isprintable() and address and rtype):
            raise BadInput(f"{where}: address {address!r} or type {rtype!r} is not a Terraform name; "
                           "pass unmodified 'terraform show -json' output")
        actions = change.get("actions")
        if (not isinstance(actions, list) or not actions
                or not all(isinstance(a, str) and a in _KNOWN_ACTIONS for a in actions)):
            raise BadInput(f"{where} ({address}): change.actions {actions!r} is not a list of Terraform actions; "
                           "pass unmodified 'terraform show -json' output")
        if rc.get("mode", "managed") != "managed":
            continue  # data sources are only read
        paths = change.get("replace_paths") or []
        shown = tuple(".".join(str(p) for p in path) if isinstance(path, list) else str(path) for path in paths)
        out.append(Change(address, rtype, tuple(actions), shown, bool(rc.get("deposed"))))
    return tuple(out)


def evaluate(doc: Any, module: str, action: Action | str, *, allow_data_loss: bool = False,
             source: str = "plan") -> Decision:
    """Decide whether the plan in ``doc`` may be applied for ``module`` during ``action``."""
    action = check_args(module, action)
    changes = changes_of(doc, source)

    def refuse(line: str) -> Decision:
        return Decision(False, module, action, changes, refusal=line)

    if doc.get("errored") is True:
        return refuse(f"{source}: Terraform marked this plan as errored; fix the error shown by the "
                      f"{module}-plan step and run the build again")
    if doc.get("applyable") is False and any(c.kind not in ("no-op", "read") for c in changes):
        return refuse(f"{source}: Terraform marked this plan as not applyable; fix the {module}-plan step's "
                      "errors and run the build again")

    unknown = [c for c in changes if c.actions not in KNOWN_ACTIONS]
    if unknown:
        c = unknown[0]
        return refuse(f"{source}: {c.address}: change.actions {list(c.actions)} is not an action combination "
                      "Terraform documents, so the guard cannot tell what it does to the resource; refusing. "
                      "Produce the plan with Terraform 1.x and pass its unmodified 'terraform show -json' output")

    warnings: list[str] = []
    forgotten = [c for c in changes if c.holds_data and c.forgets]
    if forgotten and not allow_data_loss:
        more = f" (and {len(forgotten) - 1} more)" if len(forgotten) > 1 else ""
        c = forgotten[0]
        return refuse(f"{module}: {c.address} would be forgotten{more} during {action}: Terraform would drop it "
                      f"from its state and leave it running, orphaning {loses(c.type)}: no later destroy, snapshot "
                      "or backup would know it; refusing. Remove the 'removed' block (or put the resource back), "
                      f"or rerun with {OVERRIDE} to accept orphaning it")
    for c in forgotten:
        warnings.append(f"DATA ORPHANED ({OVERRIDE}): {c.describe()}; {loses(c.type)} is left outside Terraform")
    if action is Action.DESTROY:
        building = [c for c in changes if c.kind in ("create", "update", "replace")]
        if building:
            return refuse(f"{source}: {building[0].address} would be {building[0].kind}d by a destroy; "
                          "a destroy plan must only delete; produce it with 'terraform plan -destroy'")
        copies = [c for c in changes if c.holds_data and c.destroys and c.type not in PROTECTED_TYPES]
        if copies and not allow_data_loss:
            c = copies[0]
            more = f" (and {len(copies) - 1} more)" if len(copies) > 1 else ""
            return refuse(f"{module}: {c.describe()}{more} during destroy, losing {loses(c.type)}; destroy only "
                          "removes the Filestore share and the shared PD (after backing them up) and keeps "
                          f"snapshots, backups and buckets; refusing. Rerun with {OVERRIDE} to accept the loss")
        for c in changes:
            if c.type in PROTECTED_TYPES and c.destroys:
                warnings.append(f"{c.address} will be destroyed: {PROTECTED_TYPES[c.type]} goes away with it "
                                "(the pipeline snapshotted or backed it up first where it could)")
        for c in copies:
            warnings.append(f"DATA LOSS ALLOWED ({OVERRIDE}): {c.describe()}; {loses(c.type)} is lost")
    else:
        moved = {c.address: copy for c in changes if c.kind == "delete" and (copy := moved_copy(doc, c, changes))}
        lost = [c for c in changes if c.holds_data and c.destroys and c.address not in moved]
        warnings.extend(f"MOVED: {address} (the old zone's) is deleted: {copy}" for address, copy in moved.items())
        if lost and not allow_data_loss:
            more = f" (and {len(lost) - 1} more)" if len(lost) > 1 else ""
            first = lost[0]
            return refuse(f"{module}: {first.describe()}{more} during {action}, losing {loses(first.type)}; "
                          f"refusing. Revert the change that forces this, or rerun with {OVERRIDE} to accept the loss")
        for c in lost:
            warnings.append(f"DATA LOSS ALLOWED ({OVERRIDE}): {c.describe()}; {loses(c.type)} is lost")
    if action is not Action.DESTROY:
        warnings.extend(double_billing(doc, changes, module))
    for c in changes:
        if c.type in guard_classes.CAPACITY and (c.destroys or c.forgets):
            warnings.append(f"CAPACITY: {c.describe()}: {guard_classes.CAPACITY[c.type]}")
        if c.type in TPU_TYPES and c.destroys:
            if action is Action.DESTROY:
                warnings.append(f"{c.address} will be destroyed: training on it stops")
            else:
                warnings.append(f"{c.describe()}: {TPU_TYPES[c.type]}")
    return Decision(True, module, action, changes, warnings=tuple(warnings))


def _described(doc: Mapping[str, Any], address: str, side: str) -> str:
    """``name (accelerator_type)`` of a TPU in the plan, before or after ('' when not shown)."""
    rc = next((r for r in doc.get("resource_changes", []) if r.get("address") == address), {})
    values = (rc.get("change") or {}).get(side) or {}
    name = values.get("name") if isinstance(values, Mapping) else None
    kind = values.get("accelerator_type") if isinstance(values, Mapping) else None
    if not isinstance(name, str):
        return address
    return f"{name} ({kind})" if isinstance(kind, str) else name  # a MIG names no accelerator type


def double_billing(doc: Mapping[str, Any], changes: Sequence[Change], module: str = "tpu") -> list[str]:
    """Make-before-break (TPU_REPLACE, the slots of modules/tpu_vm and modules/tpu_mig): a slice (a
    catalogue entry's ``slice_resource``: a TPU VM, a MIG) created while another of its type is
    kept. Both are billed until the pipeline's ``<module>-release`` step deletes the old one, after
    the new one is READY; the plan says how long and what that costs (docs/pipeline.md)."""
    out = []
    for c in changes:
        if c.type not in SLICE_RESOURCES or c.kind != "create":
            continue
        kept = [k for k in changes if k.type == c.type and k.kind in ("no-op", "update")]
        if kept:
            new = _described(doc, c.address, "after")
            old = ", ".join(_described(doc, k.address, "before") for k in kept)
            out.append(f"DOUBLE BILLING (make-before-break): {new} is created beside {old}, which keeps running "
                       f"(and training) until the new slice is READY and, with a MODEL, its training stops at "
                       f"a checkpoint ({module}-checkpoint); both are billed until {module}-release deletes "
                       f"{old} (`tpubuild plan` estimates how long and what it costs)")
    return out


#: The data holders a move copies: type → (the location attribute, the attribute naming the copy it
#: was made from, what the copy is) (modules/filestore and modules/shared_pd's slots).
MOVED_FROM: dict[str, tuple[str, str, str]] = {
    "google_filestore_instance": ("location", "source_backup", "the backup"),
    "google_compute_disk": ("zone", "snapshot", "the snapshot"),
}


def _values(doc: Mapping[str, Any], address: str, side: str) -> Mapping[str, Any]:
    rc = next((r for r in doc.get("resource_changes", []) if r.get("address") == address), {})
    values = (rc.get("change") or {}).get(side)
    return values if isinstance(values, Mapping) else {}


def _copy_of(values: Mapping[str, Any], attr: str) -> str:
    if attr == "source_backup":
        shares = values.get("file_shares")
        values = shares[0] if isinstance(shares, list) and shares and isinstance(shares[0], Mapping) else {}
    found = values.get(attr)
    return found if isinstance(found, str) else ""


def moved_copy(doc: Mapping[str, Any], deleted: Change, changes: Sequence[Change]) -> str:
    """What holds the data of ``deleted`` (a plain delete) when it is the old zone's half of a move:
    another resource of its type and name that the plan keeps (no-op or update) in another location
    and that was made from a copy; '' when there is none (then the delete loses data)."""
    if deleted.type not in MOVED_FROM or deleted.kind != "delete":
        return ""
    where, attr, what = MOVED_FROM[deleted.type]
    old = _values(doc, deleted.address, "before")
    for kept in changes:
        if kept.type != deleted.type or kept.kind not in ("no-op", "update") or kept.address == deleted.address:
            continue
        new = _values(doc, kept.address, "before")
        copy = _copy_of(new, attr)
        if copy and new.get("name") == old.get("name") and new.get(where) not in (None, old.get(where)):
            return f"{kept.address} in {new.get(where)} was made from {what} {copy} of it, which the move took"
    return ""
